"""The demo corpus: valid dsh logs in a persistence root, with the features it promises."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from indexer.logs.reader import read_log
from indexer.logs.roots import decode_segment, discover, implied_session_id
from indexer.query.service import StoreQueryService
from indexer.sources.files import ingest_files
from indexer.store.records.store import Store
from worker.devtools.demo_corpus import (
    MIN_SESSIONS,
    DemoSummary,
    cli_main,
    encode_segment,
    example_calls,
    example_curls,
    load_summary,
    project_key,
    write_demo_corpus,
)


def tree(root: Path) -> dict[str, bytes]:
    files = (p for p in sorted(root.rglob("*")) if p.is_file())
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in files}


def test_every_log_passes_read_log_and_the_root_layout(demo: DemoSummary) -> None:
    files = discover([demo.root])
    assert sorted(files) == sorted(demo.paths())
    assert len(files) == 24
    by_id = {s.id: s for s in demo.sessions}
    for path in files:
        log = read_log(path)  # raises on any broken rule
        assert implied_session_id(path) == log.header.id
        info = by_id[log.header.id]
        assert log.header.cwd == info.cwd
        assert log.header.parent_session == info.parent
        assert len(log.events) == info.events
        assert path.parent.parent.name == project_key(log.header.cwd)


def test_workspaces_lineage_compaction_and_event_types(demo: DemoSummary) -> None:
    assert demo.workspaces == [
        "/home/dev/ml-pipeline", "/home/dev/payments-api", "/home/dev/web-shop"
    ]
    assert any(s.cwd is None for s in demo.sessions)
    assert (demo.root / "_no-cwd").is_dir()

    children = demo.subagents
    assert children
    ids = {s.id for s in demo.sessions}
    for child in children:
        header = read_log(demo.root / child.path).header
        assert (header.origin, header.delegation_depth) == ("subagent", 1)
        assert header.parent_session in ids
        parent = next(s for s in demo.sessions if s.id == header.parent_session)
        assert parent.cwd == child.cwd
        assert header.created_at > parent.created_at

    (compacted,) = demo.compactions
    log = read_log(demo.root / compacted.path)
    replace = log.events[compacted.compaction_seq or 0].obj
    assert replace["type"] == "assistant/message"
    assert replace["surfaceOp"]["op"] == "replace"

    types: set[str] = set()
    for path in demo.paths():
        types |= {e.type for e in read_log(path).events}
    assert {
        "turn/start", "turn/end", "step/start", "step/end", "user/message", "assistant/chunk",
        "assistant/message", "tool/call", "tool/result", "session/title", "todo/write",
        "compaction/summary", "subagent/descriptor",
    } <= types
    raw = b"".join(p.read_bytes() for p in demo.paths())
    assert b'"type":"text-chunks"' in raw  # some deltas are packed, as dsh writes them


def test_tool_results_use_the_current_message_shape(demo: DemoSummary) -> None:
    for path in demo.paths():
        events = read_log(path).events
        calls = {e.obj["data"]["callId"]: e.seq for e in events if e.type == "tool/call"}
        for e in (e for e in events if e.type == "tool/result"):
            message = e.obj["data"]["message"]
            call_id = message["source"]["callId"]
            (block,) = message["content"]
            assert block["type"] == "tool-result" and block["toolCallId"] == call_id
            assert e.obj["sourceEventSeqs"] == [calls[call_id]]


def test_ingest_shadows_events_and_chinese_is_searchable(demo: DemoSummary, tmp_path: Path) -> None:
    data = tmp_path / "data"
    store = Store(data)
    try:
        summary = ingest_files(store, discover([demo.root]))
    finally:
        store.close()
    assert not summary.rejected
    assert summary.sessions == 24
    service = StoreQueryService(data)
    try:
        compacted = demo.compactions[0]
        surfaces = {e.surface for e in service.list_events(compacted.id)}
        assert {"shadowed", "current", "log-only"} <= surfaces
        payments = {s.id for s in demo.sessions if s.cwd == "/home/dev/payments-api"}
        page = service.search_sessions("支付", [], [], limit=5)
        assert page.items
        assert {hit.record.header.id for hit in page.items} <= payments
        english = service.search_sessions("flaky parser test", [], [], limit=5)
        assert english.items
    finally:
        service.close()


def test_deterministic_for_a_seed(tmp_path: Path) -> None:
    a = write_demo_corpus(tmp_path / "a", 12, seed=3)
    b = write_demo_corpus(tmp_path / "b", 12, seed=3)
    c = write_demo_corpus(tmp_path / "c", 12, seed=4)
    assert tree(a.root) == tree(b.root)
    assert [s.id for s in a.sessions] == [s.id for s in b.sessions]
    assert [s.id for s in a.sessions] != [s.id for s in c.sessions]


def test_rewriting_keeps_unchanged_files_and_drops_stale_sessions(tmp_path: Path) -> None:
    root = tmp_path / "demo"
    big = write_demo_corpus(root, 20)
    first = big.paths()[0]
    mtime = first.stat().st_mtime_ns
    small = write_demo_corpus(root, 10)
    assert first.stat().st_mtime_ns == mtime  # same bytes: not rewritten
    assert sorted(discover([root])) == sorted(small.paths())
    assert load_summary(root).sessions == small.sessions


def test_refuses_foreign_directories_and_tiny_corpora(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError):
        write_demo_corpus(tmp_path, 10)
    with pytest.raises(ValueError, match="at least"):
        write_demo_corpus(tmp_path / "x", MIN_SESSIONS - 1)


def test_cli_main_prints_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(tmp_path / "out", 9, 1) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and out[0].startswith("wrote 9 demo sessions")
    assert cli_main(tmp_path / "out2", 2, 1) == 2


def test_example_calls_use_real_ids(demo: DemoSummary) -> None:
    calls = example_calls(demo)
    ids = {s.id for s in demo.sessions}
    tools = [c.body["tool"] for c in calls]
    assert tools == ["session_search", "session_search", "session_trace", "session_event_read"]
    for c in calls:
        assert c.body["caller"]["session_id"] in ids
    assert calls[2].body["arguments"]["session_id"] in {s.id for s in demo.subagents}
    curls = example_curls(demo, "http://127.0.0.1:9")
    assert all("\ncurl -sS http://127.0.0.1:9/v1/call " in c for c in curls)
    body = json.loads(curls[0].split(" -d ", 1)[1].strip("'"))
    assert body == calls[0].body


@pytest.mark.parametrize(
    "value", ["abc-1_2.x", "a/b", ".", "..", "a~b c", "会话", "\U0001f600"]
)
def test_encode_segment_inverts_decode_segment(value: str) -> None:
    assert decode_segment(encode_segment(value)) == value


def test_project_keys() -> None:
    assert project_key("/home/dev/payments-api") == "--home-dev-payments-api--"
    assert project_key("C:\\work\\shop") == "--C-work-shop--"
    assert project_key("/") == "--root--"
    assert project_key(None) == "_no-cwd"
