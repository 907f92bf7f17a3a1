"""Caller binding: every tool call is answered for the session that made it, decided for
that call (an agent window outlives its sessions: Claude Code's ``/clear`` starts a new
session log while the same MCP server runs on).

An agent's MCP client cannot say in the tool's arguments which session is calling (they
are the model's), so the binder reads what the agent itself says and writes
(``worker.transports.mcp.window``). For each call, in this order:

1. ``--caller`` / ``SESSIONQ_CALLER`` of the window: every call is that caller;
2. the *workspace* is the client's roots (``file://`` URIs, when it offers the roots
   capability) or else the window's working directory; its sessions are those whose
   ``cwd`` equals one of them exactly (the tools' workspace rule). Every rule below
   picks one of them, so nothing a call carries can bind it to another workspace;
3. a session the call's ``_meta`` names (Codex's thread, OpenCode's session);
4. the session whose log records this very call (``worker.transports.mcp.calls``): by the call id
   the agent put in ``_meta`` (Claude Code's tool use id), else the newest unclaimed
   call naming this tool with equal arguments recorded since the window started, one
   of the connection's own session or its agent's session variable first, never one of
   a session another connection is bound to. The agent usually writes the record just
   before it sends the request, so the binder waits for it, within the call's deadline
   (at most ``MATCH_SHARE`` of what is left, and ``MATCH_MAX_S``), while it has reason to
   expect one: the call names itself or a session, the window has a session variable, or
   an earlier call of the connection was found this way (and the last long wait did find
   one);
   otherwise it looks for ``LOOK_S`` only;
5. the agent's session variable (``CLAUDE_CODE_SESSION_ID``, ...);
6. the session the connection was bound to by one of the rules above;
7. discovery: a main session before a subagent (an agent's MCP server belongs to the
   agent the user talks to, while its subagents' logs are often newer), one its host
   has open (``live``) before a closed one, then the latest ``createdAt``, then the
   greatest id. A guess, so made again at each call.

No match is a clear tool error naming the directories and how to set the caller. Each
change of a connection's session is logged once (INFO), with the rule that chose it.
"""

from __future__ import annotations

import asyncio
import logging
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import unquote, urlparse

from indexer.model.search import CwdFilter
from indexer.query.protocol import QueryService
from indexer.query.types import SessionRecord
from worker.contract.deadline import Deadline
from worker.contract.errors import MISSING_AGENT, HarnessError
from worker.transports.mcp.calls import CallFinder, ToolCall
from worker.transports.mcp.window import CallFacts, Window

log = logging.getLogger("sessionq.mcp")
MAX_CONNECTIONS: Final = 4096  # an HTTP server forgets the oldest connections past this
MATCH_SHARE: Final = 0.5  # of a call's remaining time, the most spent waiting for its record
MATCH_MAX_S: Final = 5.0  # and never longer: a record that is not there by then is not coming
LOOK_S: Final = 0.5  # the wait for a record nobody announced
POLL_S: Final = 0.05  # how often a waiting call looks at the store again
RECORD_SLACK_MS: Final = 10_000  # a call may be recorded this long before its window started


@dataclass(frozen=True, slots=True)
class BoundCaller:
    """The caller a call speaks for; ``workspace`` is its cwd when known (a signing
    Kafka backend vouches for it in the caller token)."""

    session_id: str
    workspace: str | None = None


class BindingError(HarnessError):
    """No caller session could be bound to the call (shown as a tool error)."""

    code = MISSING_AGENT


@dataclass(slots=True)
class _Connection:
    session: str | None = None  # the session it is bound to
    decided: bool = False  # chosen by a rule other than discovery
    logs: bool | None = None  # whether its agent records calls before making them


@dataclass(frozen=True, slots=True)
class _Choice:
    record: SessionRecord
    why: str
    decided: bool = True
    call: ToolCall | None = field(default=None)


def newest_in(records: Sequence[SessionRecord]) -> SessionRecord | None:
    """The discovery order of the module docstring: main before subagent, then live,
    then newest, then id."""
    if not records:
        return None
    return max(
        records,
        key=lambda r: (r.header.parent_session is None, r.live, r.header.created_at, r.header.id),
    )


def root_dirs(uris: Sequence[str]) -> list[str]:
    """The local directories of ``file://`` root URIs (other schemes are ignored)."""
    out: list[str] = []
    for uri in uris:
        parsed = urlparse(uri)
        if parsed.scheme == "file" and parsed.path:
            out.append(unquote(parsed.path).rstrip("/") or "/")
    return out


class CallerBinder:
    """Binds calls to callers (module docstring); one per server process, shared by its
    connections. ``workspace``: an explicit caller's cwd when no store can tell it."""

    def __init__(self, *, workspace: str | None = None) -> None:
        self.workspace = workspace
        self._connections: dict[str, _Connection] = {}
        self._finders: dict[int, CallFinder] = {}
        self._lock = asyncio.Lock()

    async def bind(
        self,
        window: Window,
        connection: str | None,
        service: QueryService | None,
        call: CallFacts,
        deadline: Deadline,
        ctx: Any = None,
    ) -> BoundCaller:
        """The caller of ``call`` on ``connection`` (None: a connectionless request);
        ``ctx`` is the SDK's request context, asked for the client's roots."""
        if window.caller is not None:
            return await self._explicit(window.caller, service)
        dirs = await client_roots(ctx) or [window.cwd]
        where = ", ".join(dirs)
        if service is None:
            raise BindingError(
                "no caller session: set SESSIONQ_CALLER (or --caller) in the MCP server's"
                " configuration, or give --data so the caller can be found by its working"
                f" directory ({where})"
            )
        state = self._connection(connection)
        choice = await self._choose(window, state, service, dirs, call, deadline)
        if choice is None:
            raise BindingError(
                f"no caller session: no session in the store has its cwd in {where};"
                " set SESSIONQ_CALLER (or --caller) in the MCP server's configuration"
            )
        sid = choice.record.header.id
        if sid != state.session:
            log.info("%s: calls are answered for session %s (%s)", window.label, sid, choice.why)
        state.session, state.decided = sid, choice.decided
        return BoundCaller(sid, choice.record.header.cwd)

    def forget(self, connection: str) -> None:
        """Drop what is known of a connection that ended."""
        self._connections.pop(connection, None)

    async def _explicit(self, caller: str, service: QueryService | None) -> BoundCaller:
        if self.workspace is not None or service is None:
            return BoundCaller(caller, self.workspace)
        record = await asyncio.to_thread(service.get_session, caller)
        return BoundCaller(caller, record.header.cwd if record is not None else None)

    def _connection(self, connection: str | None) -> _Connection:
        if connection is None:
            return _Connection()
        state = self._connections.get(connection)
        if state is None:
            if len(self._connections) >= MAX_CONNECTIONS:
                self._connections.pop(next(iter(self._connections)))
            state = self._connections[connection] = _Connection()
        return state

    def _finder(self, service: QueryService) -> CallFinder:
        finder = self._finders.get(id(service))
        if finder is None:
            finder = self._finders[id(service)] = CallFinder(service)
        return finder

    # ---- the rules ------------------------------------------------------------------------
    async def _choose(
        self,
        window: Window,
        state: _Connection,
        service: QueryService,
        dirs: list[str],
        call: CallFacts,
        deadline: Deadline,
    ) -> _Choice | None:
        """Rules 3-4 until one decides or the wait ends, then rules 5-7 (docstring)."""
        expected = bool(call.call_id or call.sessions or state.logs) or (
            state.logs is None and bool(window.hints)
        )
        share = min(MATCH_MAX_S, max(0.0, deadline.remaining() * MATCH_SHARE))
        waited_for = share if expected else min(share, LOOK_S)
        started = time.monotonic()
        give_up = started + waited_for
        finder = self._finder(service)
        taken = self._taken(state)
        while True:
            async with self._lock:
                sessions, choice, elsewhere = await asyncio.to_thread(
                    self._decide, finder, dirs, window, state, call, taken
                )
            if choice is not None:
                if choice.call is not None:
                    state.logs = True
                return choice
            if elsewhere and call.call_id is None:  # it names a session of another workspace
                give_up = min(give_up, started + LOOK_S)
            if time.monotonic() >= give_up:
                break
            await asyncio.sleep(POLL_S)
        waited_for = time.monotonic() - started
        if expected and not call.call_id and not call.sessions and waited_for >= LOOK_S:
            state.logs = False  # a long wait found nothing: the next ones look briefly
        return self._fallback(window, state, sessions, waited_for)

    def _taken(self, state: _Connection) -> frozenset[str]:
        """Sessions other connections are bound to (never matched by arguments)."""
        return frozenset(
            c.session for c in self._connections.values() if c is not state and c.session
        )

    def _decide(
        self,
        finder: CallFinder,
        dirs: list[str],
        window: Window,
        state: _Connection,
        call: CallFacts,
        taken: frozenset[str],
    ) -> tuple[list[SessionRecord], _Choice | None, bool]:
        """One look at the store (in a thread): the workspace's sessions, the choice of
        rules 3-4 if any, and whether a session the call names is stored elsewhere (no
        wait brings it into the workspace)."""
        service = finder.service
        sessions = service.filter_sessions([CwdFilter(tuple[str | None, ...](dirs))])
        by_id = {r.header.id: r for r in sessions}
        for key, named in call.sessions:
            if named in by_id:
                return sessions, _Choice(by_id[named], f"the call's _meta {key} names it"), False
        elsewhere = any(service.get_session(named) is not None for _, named in call.sessions)
        finder.look(sessions)
        found: ToolCall | None = None
        if call.call_id is not None:
            found = finder.by_id(call.call_id, call.tool, sessions)
            why = f"its log records this call, {call.call_id}"
        if found is None:
            preferred = {state.session, *(sid for _, sid in window.hints)} - {None}
            free = [r for r in sessions if r.header.id not in taken or r.header.id in preferred]
            found = finder.by_arguments(
                call.tool,
                call.arguments,
                free,
                window.started_ms - RECORD_SLACK_MS,
                lambda c: 0 if c.session_id in preferred else 1,
            )
            why = f"its log records this call: {call.tool} with these arguments"
        if found is None:
            return sessions, None, elsewhere
        finder.claim(found)
        return sessions, _Choice(by_id[found.session_id], why, call=found), False

    def _fallback(
        self, window: Window, state: _Connection, sessions: list[SessionRecord], waited_s: float
    ) -> _Choice | None:
        by_id = {r.header.id: r for r in sessions}
        unseen = f"no record of this call in the workspace's logs after {waited_s:.1f} s"
        for variable, sid in window.hints:
            if sid in by_id:
                return _Choice(by_id[sid], f"{unseen}; the agent's {variable}")
        if state.decided and state.session in by_id:
            return _Choice(by_id[state.session], f"{unseen}; the session it was bound to")
        found = newest_in(sessions)
        if found is None:
            return None
        return _Choice(found, f"{unseen}; discovery: the newest session of its workspace", False)


async def client_roots(ctx: Any) -> list[str]:
    """The client's root directories, when it offers the roots capability on a
    connection that can carry a server request; else none (the window's cwd is used)."""
    session = getattr(ctx, "session", None)
    if session is None:
        return []
    capabilities = session.client_capabilities
    if capabilities is None or capabilities.roots is None or not session.can_send_request:
        return []
    try:
        with warnings.catch_warnings():  # roots are deprecated in the newest protocol only
            warnings.simplefilter("ignore")
            result = await session.list_roots()
    except Exception as exc:  # a client that fails the request: the window's cwd is used
        log.warning("the MCP client's roots/list failed (%s); using the server's cwd", exc)
        return []
    return root_dirs([str(root.uri) for root in result.roots])
