"""WatchedStore ``serve`` reconciles at start (issue 10, item 5): logs deleted, rewritten,
truncated or appended while ``serve`` was down are reflected after a restart, and
sessions that ``sessionq ingest`` put in the same data dir from other paths stay."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from indexer.sources.files import ingest_files
from indexer.stats import store_stats
from indexer.store.records.store import Store
from tests.builders import assistant, header, plain, user
from tests.serve.watched import WatchedStore
from worker.devtools.demo_corpus.layout import session_path
from worker.tools.access import Caller

WS = "/w/reconcile"


def write_log(root: Path, sid: str, events: list[dict[str, Any]]) -> Path:
    path = root / session_path(WS, sid)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"type": "session", **header(sid, cwd=WS)})]
    lines += [json.dumps(e) for e in events]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def caller_log() -> list[dict[str, Any]]:
    return [
        plain(0, "turn/start", {"turn": 1}),
        plain(1, "step/start", {"turn": 1, "step": 1}),
        user(2, "who is around"),
    ]


async def search(emb: WatchedStore, word: str) -> str:
    reply = await emb.pipeline.call("session_search", {"query": word}, Caller("caller"))
    assert reply.ok, reply
    return reply.text


async def trace(emb: WatchedStore, sid: str) -> tuple[bool, str]:
    reply = await emb.pipeline.call("session_trace", {"session_id": sid}, Caller("caller"))
    return reply.ok, reply.text


async def start(root: Path, data: Path) -> WatchedStore:
    emb = WatchedStore(root, data)
    await emb.sync_once()  # the first pass: the stored state reconciled with the logs
    return emb


async def test_serve_reconciles_logs_changed_while_down(tmp_path: Path) -> None:
    root, data = tmp_path / "sessions", tmp_path / "data"
    write_log(root, "caller", caller_log())
    gone = write_log(root, "gone", [user(0, "walrus question"), assistant(1, "walrus answer")])
    write_log(root, "rewritten", [user(0, "heron question"), assistant(1, "heron answer")])
    write_log(root, "shortened", [user(0, "ibis question"), assistant(1, "ibis pelican answer")])
    write_log(root, "grown", [user(0, "koala question")])
    # A session ingested from a path serve does not watch: never reconciled away.
    other = tmp_path / "elsewhere"
    store = Store(data)
    try:
        summary = ingest_files(store, [write_log(other, "ingested", [user(0, "lemur note")])])
    finally:
        store.close()
    assert summary.rejected == []

    emb = await start(root, data)
    try:
        assert "gone" in await search(emb, "walrus")
        assert "rewritten" in await search(emb, "heron")
        assert "shortened" in await search(emb, "pelican")
        assert (await trace(emb, "gone"))[0]
        assert store_stats(data).sessions == 6
    finally:
        emb.close()

    # --- serve is down ---
    gone.unlink()
    write_log(root, "rewritten", [user(0, "osprey question"), assistant(1, "osprey answer")])
    write_log(root, "shortened", [user(0, "ibis question")])
    write_log(root, "grown", [user(0, "koala question"), assistant(1, "koala panda answer")])

    emb = await start(root, data)
    try:
        assert "gone" not in await search(emb, "walrus")
        ok, text = await trace(emb, "gone")
        assert not ok, text  # the tools do not tell a missing session from a hidden one
        assert emb.service.get_session("gone") is None

        assert "rewritten" in await search(emb, "osprey")
        assert "rewritten" not in await search(emb, "heron")
        assert [e.seq for e in emb.service.list_events("rewritten")] == [0, 1]

        assert [e.seq for e in emb.service.list_events("shortened")] == [0]
        assert "shortened" not in await search(emb, "pelican")  # only the cut event held it

        assert [e.seq for e in emb.service.list_events("grown")] == [0, 1]
        assert "grown" in await search(emb, "panda")

        assert emb.service.get_session("ingested") is not None, "an ingested session was lost"
        assert emb.status.rejected_records == 0
        stats = store_stats(data)
        assert stats.sessions == 5
        assert stats.held_sessions == 0

        # Later appends continue normally (no seq gap/conflict after the re-read).
        write_log(
            root,
            "rewritten",
            [user(0, "osprey question"), assistant(1, "osprey answer"), user(2, "osprey more")],
        )
        assert await emb.sync_once() == 1
        assert [e.seq for e in emb.service.list_events("rewritten")] == [0, 1, 2]
    finally:
        emb.close()

    # A third start with nothing changed deletes nothing.
    emb = await start(root, data)
    try:
        assert store_stats(data).sessions == 5
        assert emb.status.rejected_records == 0
    finally:
        emb.close()
