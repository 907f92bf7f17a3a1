"""An Aider history watched: each of its sessions is a log of the watcher's own (keyed by
file and session), a session appended to the file is read as soon as the file's change
is noticed (the file's sessions listed again, no walk), a session gone from a rewritten
file is deleted, and ``serve``'s local source does all of it while serving, and on its
next start deletes a session that went while it was down."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Final
from urllib.parse import quote

from indexer.logs.importers import discover_sources
from indexer.logs.importers.aider_file import HISTORY_NAME
from indexer.logs.watch import LogWatcher
from indexer.model.records import record_session_id
from tests.data_paths import AIDER_DIR
from tests.fixtures.serve import call_body, eventually, running_embedded
from tests.importers.agent_logs import aider_writes

SHOP: Final = AIDER_DIR / "shop" / HISTORY_NAME
WATCH_S: Final = 30.0
NEW: Final = [("user", "the SANDERLING report is slow"), ("assistant", "cache the report")]


def _repo(tmp_path: Path) -> Path:
    """A repository whose history is a copy of the fixture's (three sessions)."""
    repo = tmp_path / "sessions" / "shop"
    repo.mkdir(parents=True)
    shutil.copyfile(SHOP, repo / HISTORY_NAME)
    return repo


def _append(history: Path, started: str) -> str:
    """Append a session to ``history`` as Aider writes one; its session id."""
    with history.open("a") as f:
        f.write("".join(aider_writes(NEW, started)))
    session_id = discover_sources([history])[-1].session_id
    assert session_id is not None
    return session_id


def test_the_watcher_reads_an_appended_session_without_a_walk(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    history = repo / HISTORY_NAME
    watcher = LogWatcher.of([repo])
    first = list(watcher.scan())
    headers = [e for e in first if e.record.kind == "header"]
    assert len(headers) == 3
    assert {e.log for e in headers} == {f"{history}:2", f"{history}:72", f"{history}:103"}
    new = _append(history, "2025-10-04 10:00:00")
    items, walk = watcher.scan_paths([history])
    emitted = list(items)
    assert not walk
    assert [e.record.kind for e in emitted if record_session_id(e.record) == new] == [
        "header",
        "events",
    ]
    # Of the others only the last one goes on: its last output is whole now.
    last = discover_sources([history])[-2].session_id
    assert {record_session_id(e.record) for e in emitted} == {new, last}
    assert watcher.rejected == {}
    # A rewritten history without the new session: its session is deleted.
    history.write_bytes(SHOP.read_bytes())
    items, _walk = watcher.scan_paths([history])
    deletes = [e for e in items if e.record.kind == "delete"]
    assert [record_session_id(e.record) for e in deletes] == [new]


async def test_serve_follows_a_history_and_reconciles_it_on_its_next_start(
    tmp_path: Path,
) -> None:
    repo = _repo(tmp_path)
    history = repo / HISTORY_NAME
    sessions = [s.session_id for s in discover_sources([history])]
    caller = sessions[0]
    assert caller is not None
    data = tmp_path / "data"
    async with running_embedded(repo, data) as (emb, base, http):
        assert emb.status.rejected == {}
        listing = f"{base}/v1/sessions?caller={quote(caller)}"
        async with http.get(listing) as resp:
            assert {s["id"] for s in await resp.json()} == set(sessions)
        new = _append(history, "2025-10-04 10:00:00")

        async def found() -> bool:
            arguments = {"query": "SANDERLING", "session_id": new}
            body = call_body("session_event_search", arguments, caller)
            async with http.post(f"{base}/v1/call", json=body) as resp:
                reply = await resp.json()
            return bool(reply["ok"]) and "| user/message |" in reply["text"]

        await eventually(found, timeout=WATCH_S, what="the appended session searchable")
        assert emb.status.rejected == {}
    # Down, the history loses its last session; the next start deletes it.
    history.write_bytes(SHOP.read_bytes())
    async with running_embedded(repo, data) as (emb, base, http):
        async with http.get(f"{base}/v1/sessions?caller={quote(caller)}") as resp:
            assert {s["id"] for s in await resp.json()} == set(sessions)
        assert emb.service.get_session(new) is None
