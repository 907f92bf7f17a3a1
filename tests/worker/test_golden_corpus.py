"""Golden outputs of the five tools over the whole real corpus (SPEC §9-§10).

The corpus (``shared/corpus/dsh``) is ingested once per module; every case below is
one tool call by one caller, in ``phrase`` search mode (upstream's rule: the conformance
of the contract), and its reply is compared byte for byte with
``golden/<name>.txt``: the output text for a success, ``CODE: message`` for a failure
(the CLI's stderr form). ``SESSIONQ_UPDATE_GOLDEN=1`` rewrites the files instead (and
deletes those of removed cases); read the diff before committing it. Beside the byte
comparison, every reply is checked against the SPEC §10 templates with the raw corpus
files as an independent oracle (times, event types, visibility, the stored JSON).

What the cases cover, in corpus terms:

* workspaces: ``/home/dev/acp-agent`` (the big one), ``/home/dev/headless-agent``,
  ``/home/dev/web/workspace`` (older message shapes, CJK text), ``/home/dev/jsonrpc-agent``,
  ``/home/dev/snapshots``, and sessions without a cwd;
* lineage: ``111…`` is the root of a subagent family whose grandchild is ``a28585dc…``;
  two of its children (``54baeec9…``, ``0121987f…``) live in ``headless-agent``, so the
  lineage crosses workspaces; ``child-1`` points at a parent missing from the corpus;
* compaction: ``4d8b12e4…`` seq 17 replaces seq 5, ``dde299fd…`` seq 21 replaces seq 4
  (the corpus' only two ``replace`` surface operations).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final

import pytest

from indexer.logs.roots import discover
from indexer.query.service import StoreQueryService
from indexer.sources.files import ingest_files
from indexer.store.records.store import Store
from worker.calls.limits import ToolLimits
from worker.calls.pipeline import Pipeline
from worker.contract.outcome import ToolReply
from worker.tools.access import Caller

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("SESSIONQ_UPDATE_GOLDEN") == "1"

# Callers, by workspace.
ACP_ROOT = "11111111-1111-4111-8111-111111111111"  # /home/dev/acp-agent, subagent family root
ACP_CHILD = "22222222-2222-4222-8222-222222222222"  # child of ACP_ROOT
ACP_GRANDCHILD = "a28585dc-ab62-5217-a3ce-b741ad4167c2"  # child of ACP_CHILD
ACP_COMPACTED = "4d8b12e4-980a-5187-a39c-13f2d3db8cca"  # seq 17 replaces seq 5
ACP_TODO = "bce16d74-14fd-5465-94c0-33ba5bf0f4ae"  # todo/write events
ACP_TURN_ERROR = "ffe678e2-6b6b-50fc-8228-48c56dacd3fd"  # turn/end error
HEADLESS_CHILD = "54baeec9-eaf7-5c6c-820e-383957d21ed3"  # headless child of ACP_ROOT
HEADLESS_COMPACTED = "dde299fd-4ffb-5ac4-bbde-7d8c0df3400a"  # seq 21 replaces seq 4
HEADLESS_RALPH_ROOT = "41111111-1111-4111-8111-111111111111"  # two children, no events
WEB = "2acbeda7-113a-5afa-9b65-82fdcac04c72"  # /home/dev/web/workspace, older shapes
WEB_CJK = "8e884627-32e0-57ef-a72e-2078cfa0b12d"  # Chinese text
WEB_EMPTY = "05eff694-4a63-5170-98ab-a078d4f63265"  # a header without events
JSONRPC_PARENT = "sdk-snapshot-subagent"
JSONRPC_CHILD = "0b7fd85c-9f6f-4d46-b954-363984ce66fb"
JSONRPC_SIBLING = "sdk-snapshot-bash"  # another root in the same workspace
ORPHAN = "child-1"  # /home/dev/snapshots, parent missing from the corpus
NO_CWD = "subagent-inheritance-child"  # no cwd, 17 events, older user/message shape
NO_CWD_OTHER = "subagent-settlement-child"  # no cwd either
MISSING = "00000000-dead-4bee-8000-000000000000"


@dataclass(frozen=True)
class Case:
    name: str
    tool: str
    arguments: dict[str, Any]
    caller: str
    step_seq: int | None = None


CASES: tuple[Case, ...] = (
    # ---- session_search -----------------------------------------------------------------------
    Case(
        "01-session_search-acp-subagent",
        "session_search",
        {"query": "subagent", "event_types": ["user/message"]},
        ACP_ROOT,
    ),
    Case(
        "02-session_search-acp-children-of-root",
        "session_search",
        {"query": "exactly", "parent_session_ids": [ACP_ROOT]},
        ACP_CHILD,
    ),
    Case(
        "03-session_search-acp-parent-and-roots",
        "session_search",
        {
            "query": "DIRECT_CHILD_OK",
            "parent_session_ids": [ACP_ROOT],
            "include_root_sessions": True,
        },
        ACP_COMPACTED,
    ),
    Case(
        "04-session_search-headless-parent-outside-workspace",
        "session_search",
        {"query": "WORKFLOW_CHILD_OK"},
        HEADLESS_CHILD,
    ),
    Case(
        "05-session_search-headless-foreign-parent-filter",
        "session_search",
        {"query": "exactly", "parent_session_ids": [ACP_ROOT]},
        HEADLESS_CHILD,
    ),
    Case(
        "06-session_search-headless-missing-parent-filter",
        "session_search",
        {"query": "exactly", "parent_session_ids": [MISSING]},
        HEADLESS_CHILD,
    ),
    Case(
        "07-session_search-headless-compaction-surfaces",
        "session_search",
        {"query": "compaction", "event_surfaces": ["current", "shadowed"]},
        HEADLESS_CHILD,
    ),
    Case("08-session_search-web-cjk", "session_search", {"query": "文件结构"}, WEB),
    Case(
        "09-session_search-web-created-range",
        "session_search",
        {
            "query": "the",
            "created_at_from": "2026-08-07T00:00:00Z",
            "created_at_to": "2026-08-09T00:00:00.000+02:00",
            "event_types": ["assistant/message", "tool/result"],
        },
        WEB,
    ),
    Case(
        "10-session_search-acp-foreign-session-ids",
        "session_search",
        {"query": "exactly", "session_ids": [HEADLESS_CHILD, MISSING, ACP_CHILD]},
        ACP_ROOT,
    ),
    Case(
        "11-session_search-jsonrpc-visible-parent",
        "session_search",
        {
            "query": "child answer",
            "availability": ["persisted"],
            "event_seq_from": 1,
            "event_seq_to": 40,
            "event_time_from": "2026-07-31T11:49:51.1349999Z",
        },
        JSONRPC_SIBLING,
    ),
    Case(
        "12-session_search-jsonrpc-live-only",
        "session_search",
        {"query": "child answer", "availability": ["live"]},
        JSONRPC_SIBLING,
    ),
    Case("13-session_search-no-cwd-caller", "session_search", {"query": "subagent"}, NO_CWD),
    Case(
        "14-session_search-acp-no-match",
        "session_search",
        {"query": "zebra quantum marmalade"},
        ACP_ROOT,
    ),
    # ---- session_event_search -----------------------------------------------------------------
    Case(
        "15-session_event_search-self-excludes-current-step",
        "session_event_search",
        {"query": "compaction"},
        HEADLESS_COMPACTED,
    ),
    Case(
        "16-session_event_search-self-explicit-step",
        "session_event_search",
        {"query": "compaction"},
        HEADLESS_COMPACTED,
        step_seq=30,
    ),
    Case(
        "17-session_event_search-sibling-seq-range",
        "session_event_search",
        {"session_id": ACP_COMPACTED, "query": "task", "seq_from": 4, "seq_to": 20},
        ACP_ROOT,
    ),
    Case(
        "18-session_event_search-surfaces-shadowed",
        "session_event_search",
        {"session_id": HEADLESS_COMPACTED, "query": "premise", "surfaces": ["shadowed"]},
        HEADLESS_CHILD,
    ),
    Case(
        "19-session_event_search-todo-types",
        "session_event_search",
        {"session_id": ACP_TODO, "query": "kettle", "event_types": ["todo/write"]},
        ACP_ROOT,
    ),
    Case(
        "20-session_event_search-no-cwd-self",
        "session_event_search",
        {"query": "delegated"},
        NO_CWD,
    ),
    Case(
        "21-session_event_search-foreign-target",
        "session_event_search",
        {"session_id": ACP_ROOT, "query": "exactly"},
        HEADLESS_CHILD,
    ),
    Case(
        "22-session_event_search-empty-session-no-step",
        "session_event_search",
        {"query": "anything"},
        WEB_EMPTY,
    ),
    Case(
        "23-session_event_search-cjk",
        "session_event_search",
        {"session_id": WEB_CJK, "query": "文件结构", "surfaces": ["current"]},
        WEB,
    ),
    # ---- session_trace ------------------------------------------------------------------------
    Case("24-session_trace-acp-root-with-hidden-subtrees", "session_trace", {}, ACP_ROOT),
    Case(
        "25-session_trace-acp-grandchild-ancestors",
        "session_trace",
        {"session_id": ACP_GRANDCHILD},
        ACP_COMPACTED,
    ),
    Case("26-session_trace-headless-child-boundary", "session_trace", {}, HEADLESS_CHILD),
    Case(
        "27-session_trace-headless-ralph-root",
        "session_trace",
        {"session_id": HEADLESS_RALPH_ROOT},
        HEADLESS_COMPACTED,
    ),
    Case(
        "28-session_trace-jsonrpc-parent",
        "session_trace",
        {"session_id": JSONRPC_PARENT},
        JSONRPC_CHILD,
    ),
    Case("29-session_trace-orphan-missing-parent", "session_trace", {}, ORPHAN),
    Case("30-session_trace-no-cwd-self", "session_trace", {}, NO_CWD),
    Case(
        "31-session_trace-no-cwd-other-no-cwd",
        "session_trace",
        {"session_id": NO_CWD_OTHER},
        NO_CWD,
    ),
    Case(
        "32-session_trace-foreign-target", "session_trace", {"session_id": ACP_ROOT}, HEADLESS_CHILD
    ),
    Case(
        "33-session_trace-missing-target", "session_trace", {"session_id": MISSING}, HEADLESS_CHILD
    ),
    # ---- session_event_trace ------------------------------------------------------------------
    Case("34-session_event_trace-replaced-event", "session_event_trace", {"seq": 5}, ACP_COMPACTED),
    Case("35-session_event_trace-replacement", "session_event_trace", {"seq": 17}, ACP_COMPACTED),
    Case(
        "36-session_event_trace-headless-replaced-event",
        "session_event_trace",
        {"session_id": HEADLESS_COMPACTED, "seq": 4},
        HEADLESS_CHILD,
    ),
    Case(
        "37-session_event_trace-headless-replacement",
        "session_event_trace",
        {"session_id": HEADLESS_COMPACTED, "seq": 21},
        HEADLESS_CHILD,
    ),
    Case(
        "38-session_event_trace-cited-tool-call",
        "session_event_trace",
        {"session_id": WEB_CJK, "seq": 268},
        WEB,
    ),
    Case("39-session_event_trace-unknown-seq", "session_event_trace", {"seq": 9999}, ACP_COMPACTED),
    Case(
        "40-session_event_trace-foreign-target",
        "session_event_trace",
        {"session_id": HEADLESS_COMPACTED, "seq": 4},
        ACP_COMPACTED,
    ),
    Case("41-session_event_trace-negative-seq", "session_event_trace", {"seq": -1}, ACP_COMPACTED),
    # ---- session_event_read -------------------------------------------------------------------
    Case(
        "42-session_event_read-replacement-before-after",
        "session_event_read",
        {"seq": 21, "before": 3, "after": 1},
        HEADLESS_COMPACTED,
    ),
    Case(
        "43-session_event_read-replaced-target-only",
        "session_event_read",
        {"session_id": ACP_COMPACTED, "seq": 5},
        ACP_ROOT,
    ),
    Case(
        "44-session_event_read-first-event-clipped-window",
        "session_event_read",
        {"session_id": ACP_COMPACTED, "seq": 0, "before": 5, "after": 2},
        ACP_ROOT,
    ),
    Case(
        "45-session_event_read-last-event-clipped-window",
        "session_event_read",
        {"seq": 44, "before": 2, "after": 50},
        ACP_COMPACTED,
    ),
    Case(
        "46-session_event_read-packed-chunk-member",
        "session_event_read",
        {"seq": 6, "before": 2, "after": 2},
        WEB,
    ),
    Case(
        "47-session_event_read-older-shape-tool-result",
        "session_event_read",
        {"seq": 57, "before": 2, "after": 1},
        WEB,
    ),
    Case(
        "48-session_event_read-non-ascii",
        "session_event_read",
        {"session_id": WEB_CJK, "seq": 269, "before": 1},
        WEB,
    ),
    Case(
        "49-session_event_read-turn-error-neighbor-text",
        "session_event_read",
        {"session_id": ACP_TURN_ERROR, "seq": 9, "after": 2},
        ACP_TODO,
    ),
    Case(
        "50-session_event_read-todo-neighbor-text",
        "session_event_read",
        {"seq": 15, "after": 1},
        ACP_TODO,
    ),
    Case(
        "51-session_event_read-no-cwd-self-older-user-message",
        "session_event_read",
        {"seq": 1, "before": 1, "after": 1},
        NO_CWD,
    ),
    Case(
        "52-session_event_read-foreign-target",
        "session_event_read",
        {"session_id": ACP_COMPACTED, "seq": 5},
        HEADLESS_CHILD,
    ),
    Case(
        "53-session_event_read-no-cwd-caller-other-target",
        "session_event_read",
        {"session_id": NO_CWD_OTHER, "seq": 0},
        NO_CWD,
    ),
    Case("54-session_event_read-unknown-seq", "session_event_read", {"seq": 45}, ACP_COMPACTED),
    Case(
        "55-session_event_read-window-too-large",
        "session_event_read",
        {"seq": 0, "after": 51},
        ACP_COMPACTED,
    ),
    Case("56-session_event_read-empty-session", "session_event_read", {"seq": 0}, WEB_EMPTY),
    # ---- pipeline errors ----------------------------------------------------------------------
    Case("57-session_trace-unknown-caller", "session_trace", {}, MISSING),
    Case(
        "58-session_event_read-seq-not-integer", "session_event_read", {"seq": "5"}, ACP_COMPACTED
    ),
    Case("59-session_search-blank-query", "session_search", {"query": " \t "}, ACP_ROOT),
)


ERROR_CODES: Final = frozenset(
    {
        # SPEC §9.11 plus the model-visible codes of the §9.10 table and deliberate difference 6.
        "INVALID_ARGS",
        "TOOL_TIMEOUT",
        "TOOL_CANCELLED",
        "SESSION_QUERY_TOOL_MISSING_AGENT",
        "SESSION_QUERY_TOOL_UNAUTHORIZED",
        "SESSION_QUERY_TOOL_NO_CURRENT_STEP",
        "SESSION_QUERY_TOOL_FAILED",
        "SESSION_QUERY_INVALID_QUERY",
        "SESSION_QUERY_INVALID_FILTER",
        "SESSION_QUERY_INVALID_CURSOR",
        "SESSION_QUERY_ABORTED",
        "SESSION_QUERY_CORRUPT_SESSION",
        "SESSION_QUERY_EVENT_NOT_FOUND",
        "SESSION_QUERY_INDEX_FAILED",
        "SESSION_QUERY_INVALID_LIMIT",
        "SESSION_QUERY_INVALID_LINEAGE",
        "SESSION_QUERY_INVALID_SURFACE",
        "SESSION_QUERY_INVALID_WINDOW",
        "SESSION_QUERY_PERSISTENCE_FAILED",
        "SESSION_QUERY_SEARCH_DISABLED",
        "SESSION_QUERY_SESSION_NOT_FOUND",
        "SESSION_QUERY_STALE_CURSOR",
    }
)
ISO: Final = r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z"
SURFACE: Final = r"(current|shadowed|log-only)"
AVAILABILITY: Final = r"(live|persisted|live, persisted|unavailable)"


@dataclass(frozen=True)
class CorpusSession:
    """One readable corpus log, straight from its JSONL file (an oracle independent of the
    indexer): the header line and the events with packed chunk rows expanded (SPEC §1.5)."""

    header: dict[str, Any]
    events: list[dict[str, Any]]

    @property
    def cwd(self) -> str | None:
        value = self.header.get("cwd")
        return value if isinstance(value, str) else None


def expand_row(row: dict[str, Any]) -> list[dict[str, Any]]:
    """A packed ``*-chunks`` row as its ``assistant/chunk`` events (SPEC §1.5)."""
    tag, data = row["type"], row["data"]
    members = data["args"] if tag == "tool-call-chunks" else data["texts"]
    events: list[dict[str, Any]] = []
    time = row["time0"]
    for k, member in enumerate(members):
        if k:
            time += data["dt"][k - 1]
        chunk: dict[str, Any]
        if tag == "tool-call-chunks":
            chunk = {"type": "tool-call-delta", "index": data["index"], "id": data["id"]}
            if "name" in data:
                chunk["name"] = data["name"]
            chunk["argumentsDelta"] = member
        else:
            delta = "text-delta" if tag == "text-chunks" else "reasoning-delta"
            chunk = {"type": delta, "index": data["index"], "text": member}
        events.append(
            {
                "type": "assistant/chunk",
                "seq": row["seq0"] + k,
                "time": time,
                "data": {"turn": data["turn"], "step": data["step"], "chunk": chunk},
            }
        )
    return events


def load_corpus(corpus_dir: Path) -> dict[str, CorpusSession]:
    sessions: dict[str, CorpusSession] = {}
    for path in sorted(corpus_dir.glob("*.jsonl")):
        lines = path.read_text(encoding="utf-8").splitlines()
        header = json.loads(lines[0])
        events: list[dict[str, Any]] = []
        for line in lines[1:]:
            row = json.loads(line)
            events.extend(expand_row(row) if "seq0" in row else [row])
        if all(event["seq"] == i for i, event in enumerate(events)):
            sessions[header["id"]] = CorpusSession(header, events)
    return sessions


def iso(ms: int) -> str:
    moment = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def render(reply: ToolReply) -> str:
    """The golden form of a reply: the text, or ``CODE: message``."""
    if reply.error is not None:
        return f"{reply.error.code}: {reply.error.message}"
    assert reply.output is not None
    return reply.output


@pytest.fixture(scope="module")
def corpus_tools(
    corpus_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Pipeline]:
    """The whole corpus ingested into a fresh data directory, behind the tools."""
    data_dir = tmp_path_factory.mktemp("golden-corpus")
    store = Store(data_dir)
    try:
        summary = ingest_files(store, discover([corpus_dir]))
    finally:
        store.close()
    # The corpus is 159 logs, three of which are invalid (non-contiguous seqs).
    assert (summary.files, summary.sessions, len(summary.rejected)) == (159, 156, 3)
    service = StoreQueryService(data_dir)
    try:
        yield Pipeline(service, ToolLimits(search_mode="phrase"))  # upstream's contract
    finally:
        service.close()


@pytest.fixture(scope="module")
def replies(corpus_tools: Pipeline) -> dict[str, ToolReply]:
    """Every case's reply, computed once."""

    async def run_all() -> dict[str, ToolReply]:
        return {
            case.name: await corpus_tools.call(
                case.tool, case.arguments, Caller(case.caller, case.step_seq)
            )
            for case in CASES
        }

    return asyncio.run(run_all())


@pytest.fixture(scope="module")
def corpus(corpus_dir: Path) -> dict[str, CorpusSession]:
    sessions = load_corpus(corpus_dir)
    assert len(sessions) == 156
    return sessions


def test_case_names_are_unique_numbered_and_name_their_tool() -> None:
    names = [c.name for c in CASES]
    assert len(set(names)) == len(names)
    assert [n.split("-", 1)[0] for n in names] == [f"{i:02d}" for i in range(1, len(names) + 1)]
    for case in CASES:
        assert case.name.split("-")[1] == case.tool


def test_every_golden_file_belongs_to_a_case() -> None:
    names = {c.name for c in CASES}
    if UPDATE:  # regenerating: drop the files of cases that no longer exist
        for stale in GOLDEN.glob("*.txt"):
            if stale.stem not in names:
                stale.unlink()
        return
    assert {p.stem for p in GOLDEN.glob("*.txt")} == names


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_reply_matches_golden_file(replies: dict[str, ToolReply], case: Case) -> None:
    actual = render(replies[case.name]).encode("utf-8")
    path = GOLDEN / f"{case.name}.txt"
    if UPDATE:
        GOLDEN.mkdir(exist_ok=True)
        path.write_bytes(actual)
        return
    assert path.exists(), f"missing {path.name}; run with SESSIONQ_UPDATE_GOLDEN=1"
    expected = path.read_bytes()
    assert actual == expected, (
        f"{case.name} differs from its golden file\n--- expected\n"
        f"{expected.decode('utf-8')}\n--- actual\n{actual.decode('utf-8')}"
    )


def test_repeated_calls_reply_identically(
    corpus_tools: Pipeline, replies: dict[str, ToolReply]
) -> None:
    async def run_again() -> dict[str, str]:
        return {
            case.name: render(
                await corpus_tools.call(
                    case.tool, case.arguments, Caller(case.caller, case.step_seq)
                )
            )
            for case in CASES
        }

    assert asyncio.run(run_again()) == {name: render(r) for name, r in replies.items()}


def test_foreign_and_missing_ids_reply_identically(replies: dict[str, ToolReply]) -> None:
    def text(name: str) -> str:
        return render(replies[name])

    assert (
        text("05-session_search-headless-foreign-parent-filter")
        == text("06-session_search-headless-missing-parent-filter")
        == "No prior session matches found."
    )
    assert (
        text("32-session_trace-foreign-target")
        == text("33-session_trace-missing-target")
        == ("SESSION_QUERY_TOOL_UNAUTHORIZED: session target is outside the caller workspace")
    )


# ---- the golden texts against SPEC §10, with the raw corpus as the oracle -----------------------
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_reply_text_is_well_formed(replies: dict[str, ToolReply], case: Case) -> None:
    reply = replies[case.name]
    assert "\r" not in reply.text and not reply.text.endswith("\n")
    if reply.error is not None:
        assert reply.error.code in ERROR_CODES
        assert reply.text == f"Error: {reply.error.message}"
        return
    for line in reply.text.split("\n"):
        if line.startswith("Session ") and " — " in line:
            assert re.fullmatch(r"Session \S+ — \S.*", line), line


def target_of(case: Case) -> str:
    target = case.arguments.get("session_id", case.caller)
    assert isinstance(target, str)
    return target


def visible_to(caller: CorpusSession, other: CorpusSession) -> bool:
    """SPEC §9.5 header authorization."""
    if other.header["id"] == caller.header["id"]:
        return other.cwd == caller.cwd
    return caller.cwd is not None and other.cwd == caller.cwd


def ok_cases(tool: str) -> list[Case]:
    return [c for c in CASES if c.tool == tool]


@pytest.mark.parametrize("case", ok_cases("session_search"), ids=lambda c: c.name)
def test_session_search_blocks_follow_the_template_and_stay_in_the_workspace(
    replies: dict[str, ToolReply], corpus: dict[str, CorpusSession], case: Case
) -> None:
    reply = replies[case.name]
    if not reply.ok:
        return
    if reply.text == "No prior session matches found.":
        return
    caller = corpus[case.caller]
    lines = reply.text.split("\n")
    count = int(re.fullmatch(r"Session search results \((\d+)\):", lines[0])[1])  # type: ignore[index]
    blocks = lines[1:]
    if blocks[-2:] == [
        "",
        "Result cap reached. Narrow the query or add filters to find additional matches.",
    ]:
        blocks = blocks[:-2]
    assert len(blocks) == 7 * count
    for i in range(count):
        blank, head, created, parent, availability, best, snippet = blocks[7 * i : 7 * i + 7]
        assert blank == ""
        match = re.fullmatch(rf"{i + 1}\. Session (\S+) — (.*)", head)
        assert match, head
        hit = corpus[match[1]]
        assert hit.header["id"] != caller.header["id"] and visible_to(caller, hit)
        assert created == f"   Created: {iso(hit.header['createdAt'])}"
        parent_id = hit.header.get("parentSession")
        if parent_id is None:
            expected_parent = "root"
        elif parent_id in corpus and visible_to(caller, corpus[parent_id]):
            expected_parent = parent_id
        else:
            expected_parent = "[outside workspace]"
        assert parent == f"   Parent: {expected_parent}"
        assert re.fullmatch(rf"   Availability: {AVAILABILITY}", availability)
        best_match = re.fullmatch(
            rf"   Best match: seq (\d+) \| (\S+) \| {SURFACE} \| ({ISO})", best
        )
        assert best_match, best
        event = hit.events[int(best_match[1])]
        assert (best_match[2], best_match[4]) == (event["type"], iso(event["time"]))
        assert snippet.startswith("   Snippet: ")
        assert len(snippet) - len("   Snippet: ") <= 240


@pytest.mark.parametrize("case", ok_cases("session_event_search"), ids=lambda c: c.name)
def test_event_search_hits_follow_the_template_and_name_real_events(
    replies: dict[str, ToolReply], corpus: dict[str, CorpusSession], case: Case
) -> None:
    reply = replies[case.name]
    if not reply.ok:
        return
    target = corpus[target_of(case)]
    lines = reply.text.split("\n")
    assert re.fullmatch(rf"Session {re.escape(target.header['id'])} — \S.*", lines[0])
    assert lines[1] == ""
    if lines[2:] == ["No prior event matches found."]:
        return
    count = int(re.fullmatch(r"Event search results \((\d+)\):", lines[2])[1])  # type: ignore[index]
    hits = lines[3:]
    assert len(hits) == 2 * count
    for i in range(count):
        head, snippet = hits[2 * i], hits[2 * i + 1]
        match = re.fullmatch(rf"{i + 1}\. seq (\d+) \| (\S+) \| {SURFACE} \| ({ISO})", head)
        assert match, head
        event = target.events[int(match[1])]
        assert (match[2], match[4]) == (event["type"], iso(event["time"]))
        assert snippet.startswith("   Snippet: ") and len(snippet) - 12 <= 240


@pytest.mark.parametrize("case", ok_cases("session_trace"), ids=lambda c: c.name)
def test_trace_lines_follow_the_template_and_show_only_the_workspace(
    replies: dict[str, ToolReply], corpus: dict[str, CorpusSession], case: Case
) -> None:
    reply = replies[case.name]
    if not reply.ok:
        return
    caller, target = corpus[case.caller], corpus[target_of(case)]
    lines = reply.text.split("\n")
    assert re.fullmatch(rf"Session {re.escape(target.header['id'])} — \S.*", lines[0])
    assert lines[1] == f"Created: {iso(target.header['createdAt'])}"
    assert re.fullmatch(rf"Availability: {AVAILABILITY}", lines[2])
    assert lines[3:5] == ["", "Ancestors (nearest first):"]
    split = lines.index("Descendants:")
    assert lines[split - 1] == ""
    ancestors, descendants = lines[5 : split - 1], lines[split + 1 :]
    assert ancestors and descendants
    node_line = rf"- (\S+) — .* \| ({ISO}) \| {AVAILABILITY}"
    for line in ancestors:
        if line in ("- none (target is a root session)", "- [outside workspace boundary]"):
            continue
        match = re.fullmatch(node_line, line)
        assert match, line
        assert visible_to(caller, corpus[match[1]])
        assert match[2] == iso(corpus[match[1]].header["createdAt"])
    for line in descendants:
        stripped = line.lstrip(" ")
        assert (len(line) - len(stripped)) % 2 == 0
        if stripped in ("- none", "- [outside workspace subtree]"):
            continue
        match = re.fullmatch(node_line, stripped)
        assert match, line
        assert visible_to(caller, corpus[match[1]])
        assert match[2] == iso(corpus[match[1]].header["createdAt"])


@pytest.mark.parametrize("case", ok_cases("session_event_trace"), ids=lambda c: c.name)
def test_event_trace_has_exactly_seven_template_lines(
    replies: dict[str, ToolReply], corpus: dict[str, CorpusSession], case: Case
) -> None:
    reply = replies[case.name]
    if not reply.ok:
        return
    target = corpus[target_of(case)]
    event = target.events[case.arguments["seq"]]
    lines = reply.text.split("\n")
    assert len(lines) == 7
    assert re.fullmatch(rf"Session {re.escape(target.header['id'])} — \S.*", lines[0])
    assert re.fullmatch(
        rf"Target: seq {event['seq']} \| {re.escape(event['type'])} \| {SURFACE} \| "
        + re.escape(iso(event["time"])),
        lines[1],
    )
    seqs = r"(none|\d+(, \d+)*)"
    assert re.fullmatch(r"Replaced by: (none|\d+)", lines[2])
    labels = [
        "Replacement chain",
        "Events replaced by target",
        "Events cited directly as sources",
        "Direct derived events",
    ]
    for label, line in zip(labels, lines[3:], strict=True):
        assert re.fullmatch(rf"{label}: {seqs}", line), line
    cited = event.get("sourceEventSeqs", [])
    assert lines[5] == "Events cited directly as sources: " + (
        ", ".join(str(s) for s in cited) or "none"
    )
    derived = [e["seq"] for e in target.events if event["seq"] in e.get("sourceEventSeqs", [])]
    assert lines[6] == "Direct derived events: " + (", ".join(str(s) for s in derived) or "none")


@pytest.mark.parametrize("case", ok_cases("session_event_read"), ids=lambda c: c.name)
def test_event_read_prints_the_stored_event_and_its_window(
    replies: dict[str, ToolReply], corpus: dict[str, CorpusSession], case: Case
) -> None:
    reply = replies[case.name]
    if not reply.ok:
        return
    target = corpus[target_of(case)]
    seq: int = case.arguments["seq"]
    lines = reply.text.split("\n")
    assert re.fullmatch(rf"Session {re.escape(target.header['id'])} — \S.*", lines[0])
    assert lines[1:3] == [f"Target event seq {seq}:", "```json"]
    close = lines.index("```")
    # Stored key order, 2-space indentation, non-ASCII literal (JSON.stringify(e, null, 2)).
    assert "\n".join(lines[3:close]) == json.dumps(target.events[seq], indent=2, ensure_ascii=False)
    rest = lines[close + 1 :]
    first = max(0, seq - case.arguments.get("before", 0))
    last = min(len(target.events) - 1, seq + case.arguments.get("after", 0))
    expected_sections: list[tuple[str, range]] = []
    if first < seq:
        expected_sections.append(("Before:", range(first, seq)))
    if last > seq:
        expected_sections.append(("After:", range(seq + 1, last + 1)))
    for title, seqs in expected_sections:
        assert rest[:2] == ["", title]
        rest = rest[2:]
        for neighbor_seq in seqs:
            event = target.events[neighbor_seq]
            head = f"- seq {neighbor_seq} | {event['type']} | {iso(event['time'])}"
            if rest[0] == f"{head} | (no semantic text)":
                rest = rest[1:]
                continue
            assert rest[0] == head
            text_lines = 0
            rest = rest[1:]
            while rest and rest[0].startswith("  "):
                text_lines, rest = text_lines + 1, rest[1:]
            assert text_lines >= 1, f"seq {neighbor_seq} has neither text nor the marker"
    assert rest == []
