"""Aider's chat history (``.aider.chat.history.md``): one file, many sessions, each read
as a log of its own.

The hand-written fixture (``tests/data/aider``) maps as docs/importers.md says; every
real history of public repositories (``tests.data_paths.RELEVANCE_RAW``) imports through
``sessionq ingest`` with no rejection, one session per launch that holds a user message,
each session the converted Claude Code set kept among them; a search through ``sessionq
call`` finds a user's words and a command's output; a history that grows keeps its
sessions' events (a prefix at every write Aider makes) and adds the appended session;
a broken session costs only itself.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from indexer.logs.importers import LogSource, discover_sources, read_source
from indexer.logs.importers.aider_file import HISTORY_NAME
from indexer.logs.reader import LogRejectedError, SessionLog
from indexer.query.service import StoreQueryService
from indexer.sources.files import ingest_files
from indexer.store.records.store import Store
from tests.data_dirs import stored_ids
from tests.data_paths import AIDER_DIR, RELEVANCE_MANIFEST, RELEVANCE_RAW
from tests.importers.agent_logs import KINDS, aider_writes
from worker.cli.main import main

SHOP: Final = AIDER_DIR / "shop" / HISTORY_NAME
COPY: Final = AIDER_DIR / "copies" / "acme__billing.aider.chat.history.md"
START: Final = re.compile(r"(?m)^# aider chat started at ")


def _cli(*args: str) -> tuple[int, str]:
    """``sessionq`` in this process: its exit status and its output (both streams)."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
        rc = main(list(args))
    return rc, buf.getvalue()


def _spoken(path: Path) -> list[tuple[int, str]]:
    """The oracle of which launches are sessions: (ordinal, start time) of each part of
    the file after a start line that holds a ``####`` line, by plain text splitting."""
    text = path.read_bytes().decode("utf-8", "replace").replace("\r\n", "\n")
    parts = START.split(text)[1:]
    return [
        (n, part.split("\n", 1)[0].strip())
        for n, part in enumerate(parts)
        if re.search(r"(?m)^####", part)
    ]


def _texts(log: SessionLog, etype: str) -> list[str]:
    out = []
    for event in log.events:
        if event.type != etype:
            continue
        data = event.obj["data"]
        message = data.get("message", data)
        for block in message["content"]:
            inner = block["content"] if block["type"] == "tool-result" else [block]
            out += [b["text"] for b in inner if "text" in b]
    return out


# ---- the fixture, mapped ----------------------------------------------------------------------
def test_each_launch_that_holds_a_user_message_is_a_session() -> None:
    sources = discover_sources([AIDER_DIR])
    assert [(s.path, s.section.ordinal if s.section else None) for s in sources] == [
        (COPY, 0),
        (SHOP, 0),
        (SHOP, 2),  # 1 is a launch interrupted before anyone said anything
        (SHOP, 3),
    ]
    logs = [read_source(s) for s in sources]
    assert [log.header.id for log in logs] == [s.session_id for s in sources]
    assert len({log.header.id for log in logs}) == 4
    assert {log.header.source_agent for log in logs} == {"aider"}
    # The workspace is the directory holding the history; a copy's too (its name says
    # nothing sessionq could check).
    assert logs[0].header.cwd == os.path.realpath(AIDER_DIR / "copies")
    assert {log.header.cwd for log in logs[1:]} == {os.path.realpath(AIDER_DIR / "shop")}
    started = datetime(2025, 10, 1, 9, 15, 2, tzinfo=UTC)  # a local time, read as UTC
    assert logs[1].header.created_at == int(started.timestamp() * 1000)


def test_a_session_maps_inputs_replies_and_command_output() -> None:
    first, old, last = (read_source(s) for s in discover_sources([SHOP]))
    types = [e.type for e in first.events if e.type not in ("step/start", "session/title")]
    assert types == [
        "aider/start",
        "aider/output",  # the launch's output: log-only
        "user/message",
        "assistant/message",
        "tool/result",  # Aider's lint run after the edit
        "user/message",  # /run pytest ...
        "tool/result",  # ... and its output
        "user/message",  # /ask ...
        "aider/repeat",  # the prompt Aider logs again as it asks the model
        "assistant/message",
        "aider/output",  # a token report
    ]
    # The file's last output is held: Aider's next write may go on with it.
    assert last.events[-1].type == "assistant/message"
    prompt, run, ask = _texts(first, "user/message")
    assert prompt == (
        "The cart total is off by a cent for three items at 0.10 each. Find the PELICAN"
        " rounding bug\nin cart.py and fix it."
    )
    assert run == "/run pytest -q tests/test_cart.py"
    assert ask.startswith("/ask why does the test")
    results = [e.obj["data"]["message"] for e in first.events if e.type == "tool/result"]
    assert [r["source"]["callId"] for r in results] == ["line-33", "line-45"]
    assert "HERON_DECIMAL" in _texts(first, "tool/result")[0]
    assert _texts(first, "tool/result")[1].splitlines()[1].endswith("OSPREY_OUTPUT 0.3 != 0.30")
    replies = [e.obj["data"]["message"] for e in first.events if e.type == "assistant/message"]
    assert [b["type"] for b in replies[0]["content"]] == ["reasoning", "text"]
    assert "AIDERTHOUGHT" in replies[0]["content"][0]["text"]
    assert replies[0]["source"] == {
        "kind": "model",
        "provider": "aider",
        "model": "anthropic/claude-sonnet-4-20250514",
    }
    # A heading and a quote inside the model's reply stay the reply's text.
    answer = replies[1]["content"][0]["text"]
    assert answer.startswith("#### Why the comparison fails\n")
    assert "> assert cart.total() == 0.30\ncompares" in answer
    titles = [e.obj["data"]["title"] for e in first.events if e.type == "session/title"]
    assert titles == ["The cart total is off"]
    # An older Aider's history (no hard breaks; a message's next lines unmarked).
    assert _texts(old, "tool/result") == ["..\n2 passed SKUA_PASSED in 0.05s"]
    replies = [e.obj["data"]["message"] for e in old.events if e.type == "assistant/message"]
    assert {r["source"]["model"] for r in replies} == {"gpt-4o"}
    # A reasoning model's reply whose opening tag its provider dropped.
    (reply,) = [e.obj["data"]["message"] for e in last.events if e.type == "assistant/message"]
    assert [b["type"] for b in reply["content"]] == ["reasoning", "text"]
    assert "ALBATROSS" in _texts(last, "tool/result")[1]  # /git log's output


def test_a_history_written_on_windows_reads_as_any_other() -> None:
    (log,) = (read_source(s) for s in discover_sources([COPY]))
    assert _texts(log, "user/message") == ["Read NOTES.md and list the open TERN tasks."]
    assert all("\r" not in e.raw.decode() for e in log.events)


def test_a_broken_session_costs_only_itself(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    text = SHOP.read_text().replace(
        "# aider chat started at 2025-10-02 14:00:00", "# aider chat started at yesterday"
    )
    (repo / HISTORY_NAME).write_text(text)
    rc, out = _cli("ingest", str(repo), "--data", str(tmp_path / "data"))
    assert rc == 0, out
    line = text.splitlines().index("# aider chat started at yesterday") + 1
    assert f"  {repo / HISTORY_NAME}:{line}: the start line names no time: 'yesterday'" in out
    assert len(stored_ids(tmp_path / "data")) == 2


def test_a_session_whose_history_was_rewritten_is_gone(tmp_path: Path) -> None:
    path = tmp_path / HISTORY_NAME
    path.write_text(SHOP.read_text())
    (_, second, _) = discover_sources([path])
    path.write_text(SHOP.read_text().replace("2025-10-02 14:00:00", "2025-10-02 14:00:01"))
    with pytest.raises(LogRejectedError, match="start line is gone"):
        read_source(second)


def test_content_and_name_each_tell_a_history(tmp_path: Path) -> None:
    renamed = tmp_path / "notes.md"
    renamed.write_bytes(SHOP.read_bytes())
    assert [s.format for s in discover_sources([renamed])] == ["aider"] * 3
    named = tmp_path / "repo" / HISTORY_NAME
    named.parent.mkdir()
    named.write_text("an empty launch nobody spoke in\n")
    (bare,) = discover_sources([tmp_path / "repo"])
    assert bare.section is None
    with pytest.raises(LogRejectedError, match="not an Aider chat history"):
        read_source(bare)


# ---- the real histories -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[LogSource]]:
    """The real histories ingested through ``sessionq ingest``."""
    assert RELEVANCE_RAW.is_dir(), f"the shared real Aider histories are missing: {RELEVANCE_RAW}"
    data = tmp_path_factory.mktemp("aider-real") / "data"
    rc, out = _cli("ingest", str(RELEVANCE_RAW), "--data", str(data))
    assert rc == 0, out
    assert "rejected" not in out, out
    return data, discover_sources([RELEVANCE_RAW])


def test_every_real_history_imports_one_session_per_launch_spoken_in(
    real: tuple[Path, list[LogSource]],
) -> None:
    data, sources = real
    files = sorted(RELEVANCE_RAW.glob(f"*{HISTORY_NAME}"))
    assert len(files) == 23
    found = {(s.path, s.section.ordinal, s.section.started) for s in sources if s.section}
    assert found == {(p, n, started) for p in files for n, started in _spoken(p)}
    assert stored_ids(data) == {s.session_id for s in sources}
    launches = sum(len(START.findall(p.read_bytes().decode(errors="replace"))) for p in files)
    assert (len(sources), launches) == (302, 393)  # the others hold no user message
    # The sessions the converted Claude Code set kept (a curated subset of each file,
    # by repository and launch) are among them, at the same launch and time.
    manifest = json.loads(RELEVANCE_MANIFEST.read_text())
    by_repo = {p.name.removesuffix(HISTORY_NAME): p for p in files}
    kept = [e for e in manifest if e["index"] >= 0]  # -1: a caller session of their own
    assert len(kept) == 203
    for entry in kept:
        path = by_repo[entry["repo"].replace("/", "__")]
        assert (path, entry["index"], entry["started"]) in found, entry


def test_a_search_finds_a_user_s_words_and_a_command_s_output(
    real: tuple[Path, list[LogSource]],
) -> None:
    data, sources = real
    by_start = {(s.path.name, s.section.started): s.session_id for s in sources if s.section}
    asker = by_start[(f"Ahmedrali__rfp_response_platform{HISTORY_NAME}", "2025-05-24 16:50:45")]
    snapswap = by_start[(f"Ahmad-A0__Inversity-SnapSwap{HISTORY_NAME}", "2024-09-27 20:15:12")]
    # The user's own words, typo included.
    query = {"query": "database connection erro", "session_id": asker}
    text = _call(data, asker, "session_event_search", query)
    assert "| user/message |" in text
    # A command's output (/git), in another session of the workspace: a tool result.
    query = {"query": "HEAD is now at a1cdbc4", "session_id": snapswap}
    text = _call(data, asker, "session_event_search", query)
    assert "| tool/result |" in text


def test_a_search_finds_a_run_command_s_output(tmp_path: Path) -> None:
    rc, out = _cli("ingest", str(AIDER_DIR / "shop"), "--data", str(tmp_path / "data"))
    assert rc == 0, out
    first = discover_sources([SHOP])[0].session_id
    assert first is not None
    text = _call(tmp_path / "data", first, "session_event_search", {"query": "OSPREY_OUTPUT"})
    assert "| tool/result |" in text
    for unsearchable in ("AIDERTHOUGHT", "AIDERCHATTER"):  # reasoning, Aider's own output
        text = _call(tmp_path / "data", first, "session_event_search", {"query": unsearchable})
        assert text.endswith("No prior event matches found.")


def _call(data: Path, caller: str, tool: str, arguments: dict[str, Any]) -> str:
    """``sessionq call`` in this process; the tool's text."""
    rc, out = _cli("call", "--data", str(data), "--caller", caller, tool, json.dumps(arguments))
    assert rc == 0, out
    return out.strip()


# ---- growth -----------------------------------------------------------------------------------
def _stored(data: Path) -> dict[str, list[bytes]]:
    """Every stored session's events, as the read path gives them."""
    service = StoreQueryService(data)
    try:
        return {
            r.header.id: [
                service.read_event(r.header.id, e.seq).target.raw
                for e in service.list_events(r.header.id)
            ]
            for r in service.filter_sessions([])
        }
    finally:
        service.close()


def _ingest(data: Path, root: Path) -> tuple[int, int]:
    store = Store(data)
    try:
        summary = ingest_files(store, discover_sources([root]))
    finally:
        store.close()
    assert summary.rejected == []
    return summary.sessions, summary.unchanged


def test_a_grown_history_adds_the_appended_session_and_keeps_the_others(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    history = repo / HISTORY_NAME
    history.write_bytes(SHOP.read_bytes())
    assert _ingest(tmp_path / "data", repo) == (3, 0)
    before = _stored(tmp_path / "data")
    turns = [("user", "find the FULMAR totals"), ("assistant", "the totals are fine")]
    with history.open("a") as f:
        f.write("".join(aider_writes(turns, started="2025-10-04 10:00:00")))
    # The new session, and the one before it, whose last output is whole now.
    assert _ingest(tmp_path / "data", repo) == (2, 2)
    after = _stored(tmp_path / "data")
    assert set(after) - set(before) == {discover_sources([repo])[-1].session_id}
    last = discover_sources([repo])[-2].session_id
    for sid, events in before.items():
        assert after[sid][: len(events)] == events
        assert len(after[sid]) == len(events) + (sid == last)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    first=st.lists(st.sampled_from(KINDS), min_size=1, max_size=8),
    second=st.lists(st.sampled_from(KINDS), max_size=8),
)
def test_each_write_aider_makes_keeps_what_was_read(
    tmp_path_factory: pytest.TempPathFactory, first: list[str], second: list[str]
) -> None:
    """Read after every write of two sessions, each session's events are a prefix of
    what a later read gives (the store drops the prefix as an identical re-delivery)."""
    path = tmp_path_factory.mktemp("writes") / HISTORY_NAME
    writes = aider_writes([(k, f"{k} {i}") for i, k in enumerate(first)])
    writes += aider_writes([(k, f"{k} {i}") for i, k in enumerate(second)], "2025-11-10 11:00:00")
    seen: dict[str, list[bytes]] = {}
    with path.open("a") as f:
        for write in writes:
            f.write(write)
            f.flush()
            for source in discover_sources([path]):
                log = read_source(source)
                events = [e.raw for e in log.events]
                assert events[: len(seen.get(log.header.id, []))] == seen.get(log.header.id, [])
                seen[log.header.id] = events
    assert set(seen) == {s.session_id for s in discover_sources([path])}
    assert len(seen) == 2
