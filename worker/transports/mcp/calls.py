"""The tool calls the agents' logs record, as the store holds them: which session's log
records a given ``tools/call``.

An agent writes each tool call into its own log (Claude Code: an assistant record with a
``tool_use`` block, ``mcp__<server>__<tool>`` with the arguments as ``input``), usually
before its MCP request leaves; the local source applies the record to the store like
any other event (an ``assistant/message`` holding a ``tool-call`` block). ``CallFinder``
reads, for the sessions it is shown, only the events stored since it last looked (the
newest ``FIRST_LOOK`` of a session it meets for the first time), keeps the tool calls
among them (at most ``MAX_CALLS``, newest kept), and answers two questions:

* ``by_id`` — the call whose block id is the one the agent put in the request's
  ``_meta`` (exact: an id names one call);
* ``by_arguments`` — the newest call not yet claimed that names the tool (its name, or
  a name ending in ``<separator><tool>``: agents prefix their server's name) with equal
  arguments, recorded since a given time. A call claimed once (``claim``) answers no
  later request, so two identical calls of two sessions each go to one request.

The finder never decides which sessions are searched: the binder gives it the sessions
of the connection's workspace only (``worker.transports.mcp.binding``), so arguments, which are
the model's, can never reach a session of another workspace. Not thread-safe: one
caller at a time (the binder holds its lock around every use).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from indexer.errors import SessionQueryError
from indexer.model.event import load_json
from indexer.query.protocol import QueryService
from indexer.query.types import SessionRecord

FIRST_LOOK: Final = 64  # events read from the end of a session seen for the first time
MAX_READ: Final = 256  # at most this many new events of one session per look
MAX_CALLS: Final = 4096  # tool calls remembered (newest kept)
WINDOW: Final = 50  # events per read (the store's read window bound)
SEPARATORS: Final = frozenset("_-.:/")


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One ``tool-call`` block of a stored ``assistant/message``."""

    session_id: str
    seq: int
    block: int
    call_id: str
    name: str
    arguments: Any  # the parsed JSON arguments; None when they were not JSON
    time: int  # the event's time (ms)

    @property
    def key(self) -> tuple[str, int, int]:
        return (self.session_id, self.seq, self.block)


def names_tool(logged: str, tool: str) -> bool:
    """Whether a logged tool name is ``tool`` as an agent names an MCP server's tool."""
    if logged == tool:
        return True
    cut = len(logged) - len(tool)
    return cut > 0 and logged.endswith(tool) and logged[cut - 1] in SEPARATORS


class CallFinder:
    """The tool calls of the sessions it is shown (module docstring)."""

    def __init__(self, service: QueryService) -> None:
        self.service = service
        self._next: dict[str, int] = {}  # session -> the first seq not read yet
        self._calls: OrderedDict[tuple[str, int, int], ToolCall] = OrderedDict()
        self._claimed: OrderedDict[tuple[str, int, int], None] = OrderedDict()

    def look(self, sessions: Iterable[SessionRecord]) -> None:
        """Read what the store added to ``sessions`` since the last look (one snapshot)."""
        with self.service.reading():
            for record in sessions:
                self._read_new(record.header.id)

    def by_id(self, call_id: str, tool: str, sessions: Sequence[SessionRecord]) -> ToolCall | None:
        ids = {r.header.id for r in sessions}
        for call in reversed(self._calls.values()):
            if call.call_id == call_id and call.session_id in ids and names_tool(call.name, tool):
                return call
        return None

    def by_arguments(
        self,
        tool: str,
        arguments: Any,
        sessions: Sequence[SessionRecord],
        since_ms: int,
        rank: Callable[[ToolCall], int] = lambda _call: 0,
    ) -> ToolCall | None:
        """The best unclaimed match (module docstring): the lowest ``rank``, then the
        newest (time, then seq)."""
        ids = {r.header.id for r in sessions}
        found = [
            call
            for call in self._calls.values()
            if call.session_id in ids
            and call.time >= since_ms
            and call.key not in self._claimed
            and names_tool(call.name, tool)
            and call.arguments == arguments
        ]
        if not found:
            return None
        return min(found, key=lambda c: (rank(c), -c.time, -c.seq, -c.block))

    def claim(self, call: ToolCall) -> None:
        self._claimed[call.key] = None
        while len(self._claimed) > MAX_CALLS:
            self._claimed.popitem(last=False)

    # ---- reading --------------------------------------------------------------------------
    def _read_new(self, session_id: str) -> None:
        last = self.service.last_seq(session_id)
        if last is None:
            return
        first = self._next.get(session_id)
        if first is None or first > last + 1:  # new to us, or its log was rewritten
            first = last + 1 - FIRST_LOOK
        first = max(0, first, last + 1 - MAX_READ)
        for start in range(first, last + 1, WINDOW + 1):
            after = min(WINDOW, last - start)
            try:
                window = self.service.read_event(session_id, start, after=after)
            except SessionQueryError:  # deleted or rewritten meanwhile: read next time
                return
            for event in window.events:
                if event.type == "assistant/message":
                    self._remember(session_id, event.seq, event.time, event.data)
        self._next[session_id] = last + 1

    def _remember(self, session_id: str, seq: int, time: int, data: Any) -> None:
        message = data.get("message") if isinstance(data, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            return
        for n, block in enumerate(content):
            if not isinstance(block, dict) or block.get("type") != "tool-call":
                continue
            name, call_id = block.get("name"), block.get("id")
            if not isinstance(name, str) or not name:
                continue
            call = ToolCall(
                session_id,
                seq,
                n,
                call_id if isinstance(call_id, str) else "",
                name,
                _arguments(block.get("arguments")),
                time,
            )
            self._calls[call.key] = call
            self._calls.move_to_end(call.key)
        while len(self._calls) > MAX_CALLS:
            self._calls.popitem(last=False)


def _arguments(stored: Any) -> Any:
    """A block's arguments as JSON values (stored as JSON text); {} for none."""
    if stored is None or stored == "":
        return {}
    if not isinstance(stored, str):
        return stored
    try:
        return load_json(stored)
    except ValueError:
        return None
