"""The hand-written Claude Code and Codex trees ingest with every session and every
subagent link, and the five tools read them like dsh sessions: search over user,
assistant, tool-use and tool-result text (thinking and unmapped records are kept but not
searchable), traces show each child under its parent, authorization is the workspace's."""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest

from indexer.logs.importers import discover_sources, read_source
from indexer.model.header import parse_header
from indexer.query.service import StoreQueryService
from indexer.sources.files import IngestSummary
from tests.fixtures.importers import (
    CC_CHILD,
    CC_LEGACY_CHILD,
    CC_LEGACY_PARENT,
    CC_MAIN,
    CC_ORPHAN,
    CC_ORPHAN_PARENT,
    CC_OTHER,
    CLAUDE_PROJECTS,
    CLAUDE_SESSIONS,
    CODEX_SESSION_IDS,
    CODEX_SESSIONS,
    CX_CHILD,
    CX_MAIN,
    CX_ORPHAN,
    CX_ORPHAN_PARENT,
    Tools,
)

PARENTS = {
    CC_CHILD: CC_MAIN,
    CC_LEGACY_CHILD: CC_LEGACY_PARENT,
    CC_ORPHAN: CC_ORPHAN_PARENT,
    CX_CHILD: CX_MAIN,
    CX_ORPHAN: CX_ORPHAN_PARENT,
}


def test_every_session_and_every_subagent_link_is_ingested(
    imported: tuple[Path, IngestSummary],
) -> None:
    data, summary = imported
    assert summary.rejected == []
    assert summary.sessions == len(CLAUDE_SESSIONS | CODEX_SESSION_IDS) == 9
    service = StoreQueryService(data)
    try:
        for sid in CLAUDE_SESSIONS | CODEX_SESSION_IDS:
            record = service.get_session(sid)
            assert record is not None, sid
            header = record.header
            expected = "codex" if sid in CODEX_SESSION_IDS else "claude-code"
            assert header.source_agent == expected
            assert header.parent_session == PARENTS.get(sid)
            assert header.origin == ("subagent" if sid in PARENTS else None)
        assert service.get_session(CC_CHILD).header.agent_preset == "general-purpose"  # type: ignore[union-attr]
        assert service.get_session(CX_ORPHAN).header.delegation_depth == 2  # type: ignore[union-attr]
        assert service.get_session(CC_MAIN).header.cwd == "/home/dev/shop"  # type: ignore[union-attr]
    finally:
        service.close()


async def test_session_trace_shows_each_child_under_its_parent(tools: Tools) -> None:
    for parent, child in (
        (CC_MAIN, CC_CHILD),
        (CC_LEGACY_PARENT, CC_LEGACY_CHILD),
        (CX_MAIN, CX_CHILD),
    ):
        text = await tools.text("session_trace", {"session_id": parent}, parent)
        descendants = text.split("Descendants:", 1)[1]
        assert f"- {child} — " in descendants, text
        child_text = await tools.text("session_trace", {}, child)
        ancestors = child_text.split("Ancestors (nearest first):", 1)[1].split("Descendants:")[0]
        assert f"- {parent} — " in ancestors, child_text


async def test_an_orphan_subagent_is_kept_with_its_missing_parent_named(tools: Tools) -> None:
    text = await tools.text("session_trace", {}, CC_ORPHAN)
    assert text.startswith(f"Session {CC_ORPHAN} — ")
    assert "Source agent: claude-code" in text
    search = await tools.text("session_search", {"query": "ORPHAN_FIG"}, CC_MAIN)
    assert "   Source agent: claude-code" in search
    assert f"Session {CC_ORPHAN} — " in search
    # its own line, between the hit's creation time and its parent
    assert re.search("\n   Created: [^\n]+\n   Source agent: claude-code\n   Parent: ", search)


def _reader(target: str) -> str:
    """A caller in the target's workspace that is not the target (a search of one's own
    session stops at its current step)."""
    if target in CODEX_SESSION_IDS:
        return CX_ORPHAN if target != CX_ORPHAN else CX_MAIN
    return CC_ORPHAN if target != CC_ORPHAN else CC_MAIN


@pytest.mark.parametrize(
    ("target", "query", "event_type"),
    [
        (CC_MAIN, "PINEAPPLE", "user/message"),
        (CC_MAIN, "MANGO_FUNCTION", "assistant/message"),
        (CC_MAIN, "KIWI", "assistant/message"),  # the tool_use input
        (CC_MAIN, "KIWI_RESULT_LINE", "tool/result"),
        (CC_MAIN, "COMPACTED_PAPAYA", "user/message"),  # the compaction summary
        (CC_MAIN, "DRAGONFRUIT", "user/message"),  # text beside an image
        (CC_CHILD, "SUBAGENT_GUAVA", "assistant/message"),
        (CC_LEGACY_CHILD, "LEGACY_LYCHEE", "assistant/message"),
        (CX_MAIN, "BLUEBERRY", "user/message"),
        (CX_MAIN, "CRANBERRY", "assistant/message"),  # function_call arguments
        (CX_MAIN, "CRANBERRY_TIMEOUT", "tool/result"),  # function_call_output
        (CX_MAIN, "ELDERBERRY", "assistant/message"),  # local_shell_call
        (CX_MAIN, "GOOSEBERRY_LIMIT", "assistant/message"),  # custom_tool_call
        (CX_MAIN, "HONEYDEW_DONE", "tool/result"),  # custom_tool_call_output
        (CX_MAIN, "JACKFRUIT", "assistant/message"),  # web_search_call
        (CX_MAIN, "LIMEADE", "assistant/message"),
        (CX_MAIN, "NECTARINE", "user/message"),  # compacted
        (CX_CHILD, "OLIVE_SUBAGENT", "assistant/message"),
    ],
)
async def test_search_finds_user_assistant_tool_use_and_tool_result_text(
    tools: Tools, target: str, query: str, event_type: str
) -> None:
    arguments = {"query": query, "session_id": target}
    text = await tools.text("session_event_search", arguments, _reader(target))
    assert f"| {event_type} | current |" in text, text


@pytest.mark.parametrize(
    ("target", "query"),
    [
        (CC_MAIN, "SECRETTHOUGHT"),  # thinking: a reasoning block, never searchable
        (CC_MAIN, "UNKNOWNTYPE_TOKEN"),  # an unknown record: log-only, kept verbatim
        (CX_MAIN, "CODEXTHOUGHT"),  # reasoning summary
        (CX_MAIN, "DEVELOPERONLY_TOKEN"),  # developer message: log-only
    ],
)
async def test_thinking_and_unmapped_records_are_kept_but_not_searchable(
    tools: Tools, target: str, query: str
) -> None:
    arguments = {"query": query, "session_id": target}
    text = await tools.text("session_event_search", arguments, _reader(target))
    assert "No prior event matches found." in text, text


async def test_a_thinking_block_is_read_back_verbatim(tools: Tools) -> None:
    text = await tools.text("session_event_read", {"seq": 4}, CC_MAIN)
    assert "SECRETTHOUGHT" in text
    assert '"type": "reasoning"' in text


async def test_event_search_hits_each_agents_text_only_once(tools: Tools) -> None:
    # Codex repeats messages as event_msg lines; those stay log-only (no double hits).
    arguments = {"query": "LIMEADE", "session_id": CX_MAIN}
    text = await tools.text("session_event_search", arguments, CX_CHILD)
    assert "Event search results (1):" in text, text


async def test_an_imported_caller_searches_its_own_session_before_its_current_step(
    tools: Tools,
) -> None:
    # step/start marks each model call: the last one (seq 14) is the current step.
    earlier = await tools.text("session_event_search", {"query": "DRAGONFRUIT"}, CC_MAIN)
    assert "seq 13 | user/message | current |" in earlier, earlier
    current = await tools.text("session_event_search", {"query": "STARFRUIT"}, CC_MAIN)
    assert "No prior event matches found." in current, current


async def test_session_search_shows_the_source_agent_and_the_summary_title(tools: Tools) -> None:
    # A search never lists the caller's own session: ask from another one of the workspace.
    text = await tools.text("session_search", {"query": "PINEAPPLE"}, CC_LEGACY_PARENT)
    assert f"Session {CC_MAIN} — Fruit inventory refactor" in text, text
    assert "   Source agent: claude-code\n" in text
    # The other workspace's session holds the word too and is not visible.
    assert CC_OTHER not in text
    codex = await tools.text("session_search", {"query": "BLUEBERRY"}, CX_CHILD)
    assert "   Source agent: codex\n" in codex


async def test_a_foreign_workspace_target_is_refused(tools: Tools) -> None:
    result = await tools.pipeline.call(
        "session_event_search", {"query": "PINEAPPLE", "session_id": CC_OTHER}, None
    )
    assert not result.ok  # no caller at all
    from worker.tools.access import Caller

    refused = await tools.pipeline.call(
        "session_event_search", {"query": "PINEAPPLE", "session_id": CC_OTHER}, Caller(CC_MAIN)
    )
    assert "outside the caller workspace" in refused.text, refused.text


def test_mapped_events_name_their_source_line() -> None:
    main = next(s for s in discover_sources([CLAUDE_PROJECTS]) if s.path.stem == CC_MAIN)
    log = read_source(main)
    tool_result = next(e for e in log.events if e.type == "tool/result")
    assert tool_result.obj["data"]["import"]["line"] == 6
    assert tool_result.obj["data"]["import"]["uuid"] == "a0000000-0000-4000-8000-000000000004"
    unknown = log.events[-1]
    assert unknown.type == "claude-code/x-future-record"
    assert "surfaceOp" not in unknown.obj
    assert unknown.obj["data"]["note"].endswith("UNKNOWNTYPE_TOKEN")  # the record, verbatim
    # A summary has no timestamp of its own: it takes the session's creation time.
    assert log.events[0].type == "session/title" and log.events[0].time == log.header.created_at


def test_the_source_agent_round_trips_through_the_header_json() -> None:
    log = read_source(next(iter(discover_sources([CODEX_SESSIONS]))))
    wire = orjson.loads(orjson.dumps(log.header.to_json()))
    assert wire["sourceAgent"] == "codex"
    assert parse_header(wire) == log.header
    dsh = parse_header({"type": "session", "id": "x", "createdAt": 1})
    assert "sourceAgent" not in dsh.to_json() and dsh.agent == "dsh"
