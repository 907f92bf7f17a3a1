"""Workspace authority as a property (SPEC §9.5, §9.8, §9.10, §9.11).

Random corpora spread over several workspaces (including sessions without a cwd, and two
cwd strings that differ only by a trailing slash), with lineage that crosses workspaces and
parents missing from the corpus. Every session carries a unique secret word in its text and
title. Random callers make random calls with guessed ids of foreign sessions, of sessions
that do not exist, and of visible sessions, in every id-bearing argument. For every reply:

1. no output or error text contains a foreign session's id, title or secret word;
2. the reply (code and text) is the same when each foreign id in the arguments is replaced
   by a nonexistent one (foreign and missing are indistinguishable);
3. every error code is one of the closed set (§9.11 plus the §9.10 table), fixed-message
   codes carry their fixed message, and a healthy store never yields the generic failure;
4. the outcome code is the one the SPEC's step order dictates: foreign and missing targets
   are refused, visible ones are answered (so a tool that refuses everything fails too).
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from indexer.query.service import StoreQueryService
from tests.builders import BASE_TIME, assistant, header, plain, title, user
from tests.fixtures.stores import build_store
from worker.calls.pipeline import Pipeline
from worker.contract.outcome import ToolReply
from worker.tools.access import Caller

CWDS: Final = ("/ws/alpha", "/ws/beta", "/ws/alpha/", None)
TOOLS: Final = (
    "session_search",
    "session_event_search",
    "session_trace",
    "session_event_trace",
    "session_event_read",
)
UNAUTHORIZED_MESSAGES: Final = frozenset(
    {
        "session target is outside the caller workspace",
        "cross-session search is unavailable because the caller session has no workspace",
    }
)
# Codes whose message is always the same (SPEC §9.10 table, §9.11).
FIXED_MESSAGES: Final = {
    "SESSION_QUERY_TOOL_MISSING_AGENT": "session query tools require an agent-bound caller",
    "SESSION_QUERY_TOOL_NO_CURRENT_STEP": "current-session search requires an active step boundary",
    "SESSION_QUERY_TOOL_FAILED": "session query operation failed",
    "SESSION_QUERY_ABORTED": "session query was cancelled",
    "SESSION_QUERY_CORRUPT_SESSION": "session event history is corrupt",
    "SESSION_QUERY_EVENT_NOT_FOUND": "session event was not found",
    "SESSION_QUERY_INDEX_FAILED": "session search index is unavailable",
    "SESSION_QUERY_INVALID_LIMIT": "session query result limit was rejected",
    "SESSION_QUERY_INVALID_LINEAGE": "session lineage is invalid",
    "SESSION_QUERY_INVALID_SURFACE": "session event history is invalid",
    "SESSION_QUERY_INVALID_WINDOW": "session event window is invalid",
    "SESSION_QUERY_PERSISTENCE_FAILED": "session history storage is unavailable",
    "SESSION_QUERY_SEARCH_DISABLED": "session search is disabled in this deployment",
    "SESSION_QUERY_SESSION_NOT_FOUND": "session was not found",
    "SESSION_QUERY_STALE_CURSOR": (
        "session history changed while paging; retry the complete search call"
    ),
}
ERROR_CODES: Final = frozenset(
    {
        "INVALID_ARGS",
        "TOOL_TIMEOUT",
        "TOOL_CANCELLED",
        "SESSION_QUERY_TOOL_UNAUTHORIZED",
        "SESSION_QUERY_INVALID_QUERY",
        "SESSION_QUERY_INVALID_FILTER",
        "SESSION_QUERY_INVALID_CURSOR",
        *FIXED_MESSAGES,
    }
)


# ---- the corpus -------------------------------------------------------------------------------
def session_id(index: int) -> str:
    return f"sess-{index:02d}"


@dataclass(frozen=True)
class SessionSpec:
    index: int
    cwd: str | None
    parent: int | None  # an earlier session, or None
    missing_parent: bool  # parentSession names a session that is not in the corpus
    titled: bool
    stepped: bool  # the log has a step/start (a current-step boundary)
    compacted: bool  # the assistant reply is later replaced (a compaction)
    live: bool
    created_offset: int

    @property
    def id(self) -> str:
        # Fixed width, so no id is a substring of another.
        return session_id(self.index)

    @property
    def secret(self) -> str:
        return f"zq{self.index:02d}kw"

    @property
    def title(self) -> str:
        return f"Heading{self.index:02d} about {self.secret}"

    def header(self) -> dict[str, Any]:
        parent = f"absent-parent-{self.index:02d}" if self.missing_parent else None
        if self.parent is not None:
            parent = session_id(self.parent)
        return header(
            self.id, cwd=self.cwd, created_at=BASE_TIME + self.created_offset, parent=parent
        )

    def events(self) -> list[dict[str, Any]]:
        log: list[dict[str, Any]] = [
            plain(0, "turn/start", {"turn": 1}),
            user(1, f"common question {self.secret} alpha"),
        ]
        if self.titled:
            log.append(title(len(log), self.title))
        if self.stepped:
            log.append(plain(len(log), "step/start", {"turn": 1, "step": 1}))
        reply_seq = len(log)
        log.append(assistant(reply_seq, f"common answer {self.secret}"))
        if self.compacted:
            seq = len(log)
            log.append(
                user(
                    seq, f"summary of {self.secret}", op=(reply_seq, reply_seq), sources=[reply_seq]
                )
            )
        log.append(plain(len(log), "turn/end", {"turn": 1, "reason": {"kind": "completed"}}))
        return log


@dataclass(frozen=True)
class Corpus:
    sessions: tuple[SessionSpec, ...]

    def by_id(self, sid: str) -> SessionSpec | None:
        return next((s for s in self.sessions if s.id == sid), None)

    def foreign_to(self, caller: SessionSpec) -> list[SessionSpec]:
        """Sessions the caller may not see (SPEC §9.5 header authorization)."""
        return [
            s
            for s in self.sessions
            if s.index != caller.index and (caller.cwd is None or s.cwd != caller.cwd)
        ]


@st.composite
def corpora(draw: st.DrawFn) -> Corpus:
    count = draw(st.integers(min_value=2, max_value=7))
    sessions = []
    for i in range(count):
        # Dense lineage (two in three sessions have a parent), across workspaces.
        parent = draw(st.integers(0, i - 1) | st.integers(0, i - 1) | st.none()) if i else None
        sessions.append(
            SessionSpec(
                index=i,
                cwd=draw(st.sampled_from(CWDS)),
                parent=parent,
                missing_parent=parent is None and draw(st.booleans()),
                titled=draw(st.booleans()),
                stepped=draw(st.booleans()),
                compacted=draw(st.booleans()),
                live=draw(st.booleans()),
                created_offset=draw(st.integers(0, 5)) * 1000,
            )
        )
    return Corpus(tuple(sessions))


# ---- the calls ---------------------------------------------------------------------------------
# An id reference: ("self",) the caller, ("session", k) the k-th session (visible or foreign,
# whatever the caller), ("ghost", k) an id nobody has.
Ref = tuple[str, int]


def refs(corpus: Corpus, caller: SessionSpec) -> st.SearchStrategy[Ref]:
    """Mostly the caller's foreign sessions (the interesting case), else any session, the
    caller itself, or a ghost."""
    options = [
        st.tuples(st.just("session"), st.integers(0, len(corpus.sessions) - 1)),
        st.just(("self", 0)),
        st.tuples(st.just("ghost"), st.integers(0, 3)),
    ]
    foreign = [s.index for s in corpus.foreign_to(caller)]
    if foreign:
        pick = st.tuples(st.just("session"), st.sampled_from(foreign))
        options = [pick, pick, *options]
    return st.one_of(options)


@dataclass(frozen=True)
class CallSpec:
    caller: int
    tool: str
    arguments: tuple[tuple[str, Any], ...]  # values may hold Ref / list[Ref] placeholders


def _optional(draw: st.DrawFn, name: str, strategy: st.SearchStrategy[Any]) -> list[Any]:
    return [(name, draw(strategy))] if draw(st.booleans()) else []


@st.composite
def calls(draw: st.DrawFn, corpus: Corpus) -> CallSpec:
    count = len(corpus.sessions)
    caller = draw(st.integers(0, count - 1))
    ref = refs(corpus, corpus.sessions[caller])
    ref_list = st.lists(ref, min_size=0, max_size=3)
    # Parent guesses favour foreign sessions that do have children (the existence oracle).
    foreign = corpus.foreign_to(corpus.sessions[caller])
    parents = {s.parent for s in corpus.sessions if s.parent is not None}
    foreign_parents = sorted(parents & {f.index for f in foreign})
    parent_ref = (
        st.one_of(st.tuples(st.just("session"), st.sampled_from(foreign_parents)), ref)
        if foreign_parents
        else ref
    )
    query = st.sampled_from(["common", "common", "alpha", "common answer", "summary", "   "])
    query = query | st.sampled_from([s.secret for s in corpus.sessions])
    small = st.integers(0, 8) | st.just(-1)
    tool = draw(st.sampled_from(TOOLS))
    args: list[tuple[str, Any]] = []
    target = [] if draw(st.integers(0, 3)) == 0 else [("session_id", draw(ref))]
    if tool == "session_search":
        args.append(("query", draw(query)))
        args += _optional(draw, "session_ids", ref_list)
        args += _optional(draw, "parent_session_ids", st.lists(parent_ref, max_size=3))
        args += _optional(draw, "include_root_sessions", st.booleans())
        args += _optional(
            draw,
            "event_surfaces",
            st.lists(st.sampled_from(["current", "shadowed", "log-only"]), min_size=1, max_size=2),
        )
        args += _optional(draw, "availability", st.sampled_from([["live"], ["persisted"]]))
    elif tool == "session_event_search":
        args += [*target, ("query", draw(query))]
        args += _optional(draw, "seq_from", small)
        args += _optional(draw, "seq_to", small)
    elif tool == "session_trace":
        args += target
    else:
        args += [*target, ("seq", draw(small))]
        if tool == "session_event_read":
            window = st.integers(0, 3) | st.just(60)
            args += _optional(draw, "before", window)
            args += _optional(draw, "after", window)
    return CallSpec(caller, tool, tuple(args))


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[Corpus, list[CallSpec]]:
    corpus = draw(corpora())
    return corpus, draw(st.lists(calls(corpus), min_size=1, max_size=6))


# ---- running ----------------------------------------------------------------------------------
def resolve(value: Any, caller: SessionSpec, corpus: Corpus, hide: bool) -> Any:
    """Turn placeholders into ids; with ``hide``, every foreign session's id becomes a fresh
    nonexistent id (one per session, so duplicates stay duplicates)."""
    if isinstance(value, list):
        return [resolve(v, caller, corpus, hide) for v in value]
    if not (isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str)):
        return value
    kind, k = value
    if kind == "self":
        return caller.id
    if kind == "ghost":
        return f"ghost-{k:02d}"
    session = corpus.sessions[k]
    if hide and session in corpus.foreign_to(caller):
        return f"nobody-{k:02d}"
    return session.id


def names_a_foreign_session(spec: CallSpec, caller: SessionSpec, corpus: Corpus) -> bool:
    foreign = {s.index for s in corpus.foreign_to(caller)}

    def walk(value: Any) -> bool:
        if isinstance(value, list):
            return any(walk(v) for v in value)
        return isinstance(value, tuple) and value[0] == "session" and value[1] in foreign

    return any(walk(v) for _, v in spec.arguments)


def visible_target(spec: CallSpec, caller: SessionSpec, corpus: Corpus) -> SessionSpec | None:
    """The session the call targets when the caller may see it, else None."""
    ref: Ref = dict(spec.arguments).get("session_id", ("self", 0))
    kind, k = ref
    if kind == "self":
        return caller
    if kind == "ghost" or corpus.sessions[k] in corpus.foreign_to(caller):
        return None
    return corpus.sessions[k]


def expected_code(spec: CallSpec, caller: SessionSpec, corpus: Corpus) -> str | None:
    """The outcome the SPEC's step order (§9.6, §9.8, §8.3) dictates for these corpora: who
    may see what is decided by workspace alone, and visible targets are never refused."""
    args = dict(spec.arguments)
    invalid_filter = "SESSION_QUERY_INVALID_FILTER"
    if spec.tool == "session_search":
        if caller.cwd is None:
            return "SESSION_QUERY_TOOL_UNAUTHORIZED"
        if not args["query"].strip():
            return "SESSION_QUERY_INVALID_QUERY"
        if args.get("session_ids") == [] or args.get("parent_session_ids") == []:
            return invalid_filter
        return None
    if spec.tool in ("session_event_trace", "session_event_read") and args["seq"] < 0:
        return invalid_filter
    target = visible_target(spec, caller, corpus)
    if target is None:
        return "SESSION_QUERY_TOOL_UNAUTHORIZED"
    if spec.tool == "session_trace":
        return None
    if spec.tool == "session_event_search":
        low, high = args.get("seq_from", 0), args.get("seq_to", 0)
        if not args["query"].strip():
            return "SESSION_QUERY_INVALID_QUERY"
        if low < 0 or high < 0:
            return invalid_filter
        if "seq_from" in args and "seq_to" in args and low > high:
            return invalid_filter
        if target is caller and not caller.stepped:
            return "SESSION_QUERY_TOOL_NO_CURRENT_STEP"
        return None
    if spec.tool == "session_event_read" and 60 in (args.get("before"), args.get("after")):
        return "SESSION_QUERY_INVALID_WINDOW"
    if args["seq"] >= len(target.events()):
        return "SESSION_QUERY_EVENT_NOT_FOUND"
    return None


def outcome(reply: ToolReply) -> tuple[str | None, str]:
    return (reply.error.code if reply.error else None, reply.text)


def build(corpus: Corpus, data_dir: Path) -> StoreQueryService:
    build_store(
        data_dir,
        [(s.header(), s.events()) for s in corpus.sessions],
        live=[s.id for s in corpus.sessions if s.live],
    )
    return StoreQueryService(data_dir)


def check_error(reply: ToolReply) -> None:
    if reply.error is None:
        return
    code, message = reply.error.code, reply.error.message
    assert code in ERROR_CODES, (code, message)
    assert code != "SESSION_QUERY_TOOL_FAILED", f"a healthy store failed: {message}"
    if code in FIXED_MESSAGES:
        assert message == FIXED_MESSAGES[code], (code, message)
    if code == "SESSION_QUERY_TOOL_UNAUTHORIZED":
        assert message in UNAUTHORIZED_MESSAGES, message
    assert reply.text == f"Error: {message}"


def check_no_leak(reply: ToolReply, caller: SessionSpec, corpus: Corpus) -> None:
    for foreign in corpus.foreign_to(caller):
        for secret in (foreign.id, foreign.title, foreign.secret):
            assert secret not in reply.text, (
                f"{caller.id} sees {secret!r} of foreign {foreign.id}:\n{reply.text}"
            )


async def run_scenario(tools: Pipeline, corpus: Corpus, specs: Sequence[CallSpec]) -> int:
    """Runs every call (twice when it names a foreign session); returns the replies checked."""
    checked = 0
    for spec in specs:
        caller = corpus.sessions[spec.caller]
        as_caller = Caller(caller.id)
        arguments = {k: resolve(v, caller, corpus, hide=False) for k, v in spec.arguments}
        reply = await tools.call(spec.tool, arguments, as_caller)
        event(f"{spec.tool}: {reply.error.code if reply.error else 'ok'}")
        check_error(reply)
        check_no_leak(reply, caller, corpus)
        assert outcome(reply)[0] == expected_code(spec, caller, corpus), (spec, reply.text)
        checked += 1
        if names_a_foreign_session(spec, caller, corpus):
            hidden = {k: resolve(v, caller, corpus, hide=True) for k, v in spec.arguments}
            twin = await tools.call(spec.tool, hidden, as_caller)
            event(f"foreign id substituted ({spec.tool})")
            assert outcome(twin) == outcome(reply), (
                f"foreign and missing ids differ for {spec.tool}\n{arguments}\n{hidden}"
            )
            checked += 1
    return checked


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(scenario=scenarios())
def test_no_reply_reveals_or_distinguishes_a_foreign_session(
    scenario: tuple[Corpus, list[CallSpec]],
) -> None:
    corpus, specs = scenario
    with tempfile.TemporaryDirectory(prefix="sessionq-auth-") as tmp:
        service = build(corpus, Path(tmp) / "store")
        try:
            checked = asyncio.run(run_scenario(Pipeline(service), corpus, specs))
        finally:
            service.close()
    assert checked >= len(specs)


# ---- a fixed witness: the checks above can fail ------------------------------------------------
def witness_corpus() -> Corpus:
    """Caller 0 in /ws/alpha; 1 in /ws/alpha/ (foreign: no path normalization) as 0's child;
    2 in /ws/alpha as 1's child (visible, under a hidden parent); 3 without cwd."""

    def spec(i: int, cwd: str | None, parent: int | None) -> SessionSpec:
        return SessionSpec(i, cwd, parent, False, True, True, i == 2, False, i * 1000)

    return Corpus(
        (
            spec(0, "/ws/alpha", None),
            spec(1, "/ws/alpha/", 0),
            spec(2, "/ws/alpha", 1),
            spec(3, None, None),
        )
    )


def test_witness_corpus_hides_the_trailing_slash_workspace(tmp_path: Path) -> None:
    corpus = witness_corpus()
    service = build(corpus, tmp_path / "store")
    tools = Pipeline(service)
    caller = corpus.sessions[0]
    foreign = corpus.sessions[1]

    async def scenario() -> list[ToolReply]:
        as_caller = Caller(caller.id)
        return [
            await tools.call("session_trace", {}, as_caller),
            await tools.call("session_search", {"query": foreign.secret}, as_caller),
            await tools.call("session_search", {"query": "common"}, as_caller),
            await tools.call("session_trace", {"session_id": corpus.sessions[2].id}, as_caller),
            await tools.call("session_event_read", {"session_id": foreign.id, "seq": 1}, as_caller),
            await tools.call(
                "session_search", {"query": "common", "parent_session_ids": [foreign.id]}, as_caller
            ),
        ]

    try:
        replies = asyncio.run(scenario())
    finally:
        service.close()
    trace, secret_search, common_search, child_trace, foreign_read, parent_search = replies
    assert "- [outside workspace subtree]" in trace.text
    assert secret_search.text == "No prior session matches found."
    assert corpus.sessions[2].id in common_search.text
    assert "Parent: [outside workspace]" in common_search.text
    assert "- [outside workspace boundary]" in child_trace.text
    assert foreign_read.error is not None
    assert foreign_read.error.code == "SESSION_QUERY_TOOL_UNAUTHORIZED"
    # session 2 is the foreign session's visible child, yet the guess finds nothing
    assert parent_search.text == "No prior session matches found."
    for reply in replies:
        check_error(reply)
        check_no_leak(reply, caller, corpus)
    # and the leak check itself fires on a reply that does name the foreign session
    leaky = ToolReply(output=f"Session {foreign.id} — {foreign.title}")
    with pytest.raises(AssertionError, match="sees"):
        check_no_leak(leaky, caller, corpus)


# ---- every foreign session, systematically ----------------------------------------------------
async def sweep(tools: Pipeline, corpus: Corpus) -> int:
    """Every caller names every foreign session, and a ghost in its place, as a target, as a
    parent filter and as a session filter; the two replies must be identical and clean."""
    compared = 0
    for caller in corpus.sessions:
        as_caller = Caller(caller.id)
        for foreign in corpus.foreign_to(caller):
            ghost = f"nobody-{foreign.index:02d}"
            for tool, arguments in (
                ("session_trace", {"session_id": "{id}"}),
                ("session_event_read", {"session_id": "{id}", "seq": 1, "before": 1, "after": 1}),
                ("session_event_search", {"session_id": "{id}", "query": "common"}),
                ("session_search", {"query": "common", "parent_session_ids": ["{id}"]}),
                (
                    "session_search",
                    {
                        "query": "common",
                        "parent_session_ids": ["{id}"],
                        "include_root_sessions": True,
                    },
                ),
                ("session_search", {"query": "common", "session_ids": ["{id}", caller.id]}),
            ):
                real = await tools.call(tool, fill(arguments, foreign.id), as_caller)
                fake = await tools.call(tool, fill(arguments, ghost), as_caller)
                check_error(real)
                check_no_leak(real, caller, corpus)
                assert outcome(real) == outcome(fake), (tool, caller.id, foreign.id, real.text)
                compared += 1
    return compared


def fill(arguments: dict[str, Any], name: str) -> dict[str, Any]:
    def one(value: Any) -> Any:
        if isinstance(value, list):
            return [one(v) for v in value]
        return name if value == "{id}" else value

    return {key: one(value) for key, value in arguments.items()}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(corpus=corpora())
def test_every_foreign_session_reads_like_a_missing_one(corpus: Corpus) -> None:
    with tempfile.TemporaryDirectory(prefix="sessionq-auth-") as tmp:
        service = build(corpus, Path(tmp) / "store")
        try:
            compared = asyncio.run(sweep(Pipeline(service), corpus))
        finally:
            service.close()
    expected = 6 * sum(len(corpus.foreign_to(c)) for c in corpus.sessions)
    assert compared == expected
