"""What each importer gets right beyond shapes: a Codex prompt written only as an
``event_msg`` is searchable (and a prompt written twice is found once), a Codex review
subagent is the child of the session in review mode, a Claude Code subagent copied out
of its layout is recognised by its records, titles come from the first prompt, Gemini
sessions get the cwd their project hash names (else a workspace of their own), child
ids hold no other session's id, and MCP binding prefers a main session."""

from __future__ import annotations

from pathlib import Path

from indexer.logs.importers import discover_sources, read_source
from indexer.logs.importers.common import child_session_id
from indexer.model.header import SessionHeader
from indexer.query.types import SessionRecord
from tests.data_paths import GEMINI_DIR
from tests.fixtures.importers import CLAUDE_CODE_DIR, CODEX_DIR, CX_MAIN, Tools, ingest
from worker.tools.access import Caller
from worker.transports.mcp.binding import newest_in

REVIEW_PARENT = "0199a000-0000-7000-8000-000000000010"
REVIEW_CHILD = "0199a000-0000-7000-8000-000000000011"
LOOSE_MAIN = "55555555-aaaa-4aaa-8aaa-555555555555"


def _header(root: Path, sid: str) -> SessionHeader:
    for source in discover_sources([root]):
        log = read_source(source)
        if log.header.id == sid:
            return log.header
    raise AssertionError(sid)


async def test_event_msg_only_prompts_are_searchable_once(tmp_path: Path) -> None:
    ingest(tmp_path / "data", CODEX_DIR / "review", CODEX_DIR / "sessions")
    tools = Tools(tmp_path / "data")
    try:
        for sid, word in ((REVIEW_CHILD, "REVIEWPROMPT_QUINOA"), (REVIEW_PARENT, "PERSIMMON")):
            result = await tools.pipeline.call(
                "session_event_search", {"query": word}, Caller(sid, step_seq=10**9)
            )
            assert "| user/message | current |" in result.text, result.text
        # BLUEBERRY is written as a response_item and as an event_msg: one hit.
        twice = await tools.pipeline.call(
            "session_event_search", {"query": "BLUEBERRY"}, Caller(CX_MAIN, step_seq=10**9)
        )
        assert "Event search results (1):" in twice.text, twice.text
    finally:
        tools.close()


def test_a_review_subagent_is_the_child_of_the_session_in_review_mode() -> None:
    child = _header(CODEX_DIR / "review", REVIEW_CHILD)
    assert child.parent_session == REVIEW_PARENT and child.origin == "subagent"
    assert _header(CODEX_DIR / "review", REVIEW_PARENT).parent_session is None


def test_a_subagent_out_of_its_layout_is_recognised_by_its_records() -> None:
    child_id = child_session_id(LOOSE_MAIN, "feed0001")
    child = _header(CLAUDE_CODE_DIR / "loose", child_id)
    assert child.parent_session == LOOSE_MAIN and child.origin == "subagent"
    assert LOOSE_MAIN not in child.id  # no foreign id inside a child's id
    assert _header(CLAUDE_CODE_DIR / "loose", LOOSE_MAIN).parent_session is None


def test_titles_come_from_the_first_prompt() -> None:
    log = read_source(
        next(s for s in discover_sources([CODEX_DIR / "sessions"]) if CX_MAIN in s.path.name)
    )
    titles = [e for e in log.events if e.type == "session/title"]
    assert [t.obj["data"]["title"] for t in titles] == ["Why does the BLUEBERRY endpoint"]
    assert titles[0].obj["data"]["source"] == {"kind": "fallback"}


def test_gemini_sessions_get_the_cwd_their_project_hash_names() -> None:
    by_id = {
        read_source(s).header.id: read_source(s).header for s in discover_sources([GEMINI_DIR])
    }
    assert by_id["a1000001-0000-4000-8000-000000000001"].cwd == "/home/dev/web"
    sub = by_id["a1000003-0000-4000-8000-000000000003"]
    assert (
        sub.cwd == "/home/dev/web" and sub.parent_session == "a1000002-0000-4000-8000-000000000002"
    )
    unknown = by_id["a1000004-0000-4000-8000-000000000004"].cwd
    assert unknown is not None and unknown.startswith("/gemini-project/")


def test_mcp_binding_prefers_a_main_session_over_a_newer_subagent() -> None:
    main = SessionRecord(SessionHeader(id="main", createdAt=1, cwd="/w"), False, True)
    sub = SessionRecord(
        SessionHeader(id="sub", createdAt=9, cwd="/w", parentSession="main", origin="subagent"),
        True,
        True,
    )
    picked = newest_in([sub, main])
    assert picked is not None and picked.header.id == "main"
