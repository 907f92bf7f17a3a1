"""A stored log holding a made-up secret of every kind, ingested in each mode, read through
the tools (``Pipeline``, what ``sessionq call --data``, ``serve``, ``mcp`` and the worker
run) and scanned in every file of the data dir.

* ``off``: every secret is found by ``session_search`` and printed by
  ``session_event_read`` (upstream-exact; the control of the scans below).
* ``on``: none is found, none printed (markers instead, the JSON still valid), none in the
  index files; the stored events keep them.
* ``store``: as ``on``, and no file of the data dir holds one, nor any decompressed block.
"""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from indexer.model.records import DeleteRecord
from indexer.query.service import StoreQueryService
from indexer.redact import Redaction, RedactMode
from indexer.search_modes import SearchMode
from indexer.sources.files import ingest_files
from indexer.stats import store_stats
from indexer.store.blocks.table import EventBlocks
from indexer.store.layout import index_path, sqlite_path
from indexer.store.records.store import Store
from indexer.store.tables.schema import load_codec
from tests.erasure_scan import data_files
from tests.redaction.corpus import CALLER, LEAKY, STREAMED, secrets_log
from tests.redaction.labelled import KINDS, Labelled
from tests.redaction.test_recall import survives
from worker.calls.limits import ToolLimits
from worker.calls.pipeline import Pipeline
from worker.tools.access import Caller


def ingest(data: Path, paths: list[Path], mode: RedactMode) -> None:
    store = Store(data, redaction=Redaction(mode))
    try:
        summary = ingest_files(store, paths)
        assert not summary.rejected, summary.rejected
    finally:
        store.close()


def call(data: Path, tool: str, args: dict[str, Any], mode: SearchMode = "phrase") -> str:
    service = StoreQueryService(data)
    try:
        pipeline = Pipeline(service, ToolLimits(search_mode=mode))
        reply = asyncio.run(pipeline.call(tool, args, Caller(CALLER, None)))
    finally:
        service.close()
    assert reply.error is None, reply.error
    assert reply.output is not None
    return reply.output


def stored_raw(data: Path) -> bytes:
    """Every stored event's raw JSON, decompressed from its block."""
    conn = sqlite3.connect(f"file:{sqlite_path(data)}?mode=ro", uri=True)
    try:
        codec, _ = load_codec(conn)
        blocks = EventBlocks(conn, codec)
        out = [
            e.raw
            for key, next_seq in conn.execute("SELECT key, next_seq FROM sessions")
            for e in blocks.read_range(key, 0, next_seq - 1)
        ]
    finally:
        conn.close()
    return b"\n".join(out)


def file_bytes(root: Path) -> bytes:
    return b"\n".join(p.read_bytes() for p in data_files(root))


@pytest.fixture(scope="module")
def dirs(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Path], list[Labelled]]:
    tmp = tmp_path_factory.mktemp("redaction")
    paths, items = secrets_log(tmp)
    out = {}
    for mode in ("off", "on", "store"):
        out[mode] = tmp / mode
        ingest(out[mode], paths, mode)  # type: ignore[arg-type]
    return out, items


def searchable(data: Path, secret: str) -> bool:
    """The secret found as a phrase, or any long token of it found alone by word
    (``words`` mode matches a token by its stem: a fragment of the secret must not
    match either)."""
    if LEAKY in call(data, "session_search", {"query": secret}):
        return True
    fragments = {t for t in re.findall(r"[A-Za-z0-9]{12,}", secret) if re.search(r"\d", t)}
    return any(LEAKY in call(data, "session_search", {"query": t}, "words") for t in fragments)


def token_kinds(items: list[Labelled]) -> list[Labelled]:
    """One secret of every kind but the private key, whose lines are no whole tokens in
    escaped JSON text (the scans below cover it)."""
    return [i for i in items[: len(KINDS)] if i.kind != "private-key"]


def probes(items: list[Labelled]) -> list[bytes]:
    return [line.encode() for i in items for line in i.secret.splitlines() if len(line) >= 8]


def read_all(data: Path, n: int) -> str:
    return call(data, "session_event_read", {"session_id": LEAKY, "seq": 0, "after": n})


def test_off_finds_and_prints_every_secret(dirs: tuple[dict[str, Path], list[Labelled]]) -> None:
    paths, items = dirs
    shown = read_all(paths["off"], len(items))
    for item in token_kinds(items):
        assert searchable(paths["off"], item.secret), item.kind
    for item in items:
        assert survives(item.secret, shown), item.kind


@pytest.mark.parametrize("mode", ["on", "store"])
def test_no_secret_is_searchable_or_shown(
    dirs: tuple[dict[str, Path], list[Labelled]], mode: str
) -> None:
    paths, items = dirs
    data = paths[mode]
    for item in token_kinds(items):
        assert not searchable(data, item.secret), item.kind
    shown = read_all(data, len(items))
    for item in items:
        assert not survives(item.secret, shown), item.kind
        assert not survives(item.secret, json.dumps(shown)), item.kind
    target = re.search(r"```json\n(.*?)\n```", shown, re.S)
    assert target is not None
    json.loads(target.group(1))  # the unabridged JSON is still JSON
    assert "[REDACTED:" in target.group(1)
    trace = call(data, "session_trace", {"session_id": LEAKY})
    assert "[REDACTED:github-token]" in trace.splitlines()[0]  # the title
    hits = call(data, "session_search", {"query": "REDACTED github token"})
    assert LEAKY in hits and "[REDACTED:github-token]" in hits  # the snippet shows the marker


@pytest.mark.parametrize("mode", ["on", "store"])
def test_the_index_files_hold_no_secret(
    dirs: tuple[dict[str, Path], list[Labelled]], mode: str
) -> None:
    paths, items = dirs
    index = file_bytes(index_path(paths[mode]))
    control = file_bytes(index_path(paths["off"]))
    # Tantivy's doc store is LZ4-compressed: most random secrets stay literal in it (the
    # control), a few are split by a back-reference; none may be there in the mode's dir.
    literal = [p for p in probes(items) if p in control]
    assert len(literal) >= len(probes(items)) // 2, "the scan would not find them"
    assert [p for p in probes(items) if p in index] == []


def test_store_mode_leaves_no_secret_byte_in_the_data_dir(
    dirs: tuple[dict[str, Path], list[Labelled]],
) -> None:
    paths, items = dirs
    wanted = probes(items)
    for mode, expect in (("off", True), ("on", True), ("store", False)):
        raw = stored_raw(paths[mode])
        found = [p for p in wanted if p in raw]
        assert (len(found) == len(wanted)) if expect else not found, (mode, len(found))
    everything = file_bytes(paths["store"])
    assert [p for p in wanted if p in everything] == []


def test_stats_count_redactions_per_kind_and_a_delete_erases_them(
    dirs: tuple[dict[str, Path], list[Labelled]], tmp_path: Path
) -> None:
    paths, _items = dirs
    assert store_stats(paths["off"]).redactions == {}
    for mode in ("on", "store"):
        stats = store_stats(paths[mode])
        assert stats.redaction == mode
        assert set(stats.redactions) >= set(KINDS), (mode, stats.redactions)
    # erasure: the session's counts go with it
    data = tmp_path / "erase"
    ingest(data, secrets_log(tmp_path)[0], "on")
    store = Store(data, redaction=Redaction("on"))
    try:
        store.apply(DeleteRecord(v=1, kind="delete", session_id=LEAKY))
        store.commit()
    finally:
        store.close()
    assert store_stats(data).redactions == {}


@pytest.mark.parametrize("mode", ["off", "on", "store"])
def test_a_secret_streamed_over_chunks_is_redacted_across_them(
    dirs: tuple[dict[str, Path], list[Labelled]], mode: str
) -> None:
    """Each delta holds 3 characters of the secret; read one by one, the deltas joined
    give the text with the marker (``off``: the secret)."""
    paths, items = dirs
    secret = next(i.secret for i in items if i.kind == "anthropic-api-key" and not i.text)
    deltas = []
    for seq in STREAMED:
        shown = call(paths[mode], "session_event_read", {"session_id": LEAKY, "seq": seq})
        target = re.search(r"```json\n(.*?)\n```", shown, re.S)
        assert target is not None
        deltas.append(json.loads(target.group(1))["data"]["chunk"]["text"])
    joined = "".join(deltas)
    if mode == "off":
        assert secret in joined
    else:
        assert joined == "Set ANTHROPIC_API_KEY=[REDACTED:anthropic-api-key] and retry."
