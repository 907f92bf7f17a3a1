"""The tool registry: each of the five tools declared once.

A ``Tool`` carries everything about one tool in one place: its name, how schema-valid
arguments become its typed argument model, how it runs (authorization → query →
rendering, SPEC §9.8), its execution mode (SPEC §9.1), its time budget, where it
runs, and its pending-call card. Every name set, the manifest and
the pipeline derive from ``TOOLS``; registration order is the order of the tool
definitions in ``schemas.json`` (the manifest's order).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Generic, Literal, TypeVar

from indexer.query.protocol import QueryService
from indexer.search_modes import DEFAULT_SEARCH_MODE, SearchMode
from worker.contract.arguments import TOOL_NAMES, bound_violations, schema_violations
from worker.contract.deadline import CancelToken
from worker.contract.errors import InvalidArgsError, UnknownToolError, unknown_tool
from worker.tools.access import ResolvedCaller

ArgsT = TypeVar("ArgsT")
Mode = Literal["exclusive", "parallel"]
Budget = Literal["search", "read"]
Placement = Literal["loop", "thread"]


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What a running tool may use: the query service, the deployment's result cap, how
    a search query's text matches, and the call's options."""

    service: QueryService
    max_search_results: int
    search_mode: SearchMode = DEFAULT_SEARCH_MODE
    source_agents: frozenset[str] | None = None
    """A call's source-agent filter (``worker.tools.source_agents``; None: none)."""


@dataclass(frozen=True, slots=True)
class Tool(Generic[ArgsT]):
    """One model-facing tool.

    ``parse`` builds the typed arguments from schema-valid JSON and applies the rules
    upstream runs before resolving the caller (raises ``HarnessError``). ``run`` is
    synchronous: the pipeline runs it with the argument and caller steps where
    ``placement`` says. ``thread``: in one worker thread (``boundary.in_thread``) while
    other calls are in flight, so the loop serves cancels and those calls meanwhile —
    for tools whose work grows with the data (searches, lineage walks); a call alone
    runs on the loop while the tool's recent runs were short
    (``Pipeline._placed_on_loop``). ``loop``: on the event loop always —
    for tools whose work has a fixed bound (one event; a window of at most
    ``readWindowMax`` events each side), where a thread hand-off (two wake-ups across
    cores and the GIL passed back and forth, ~0.2-0.6 ms of CPU on a small VM) costs
    more than the read. ``budget``: ``search`` tools are bounded by ``searchTimeoutMs``, ``read``
    tools only by the deployment's request cap. ``card`` is the host's pending-call
    presentation.
    """

    name: str
    parse: Callable[[dict[str, Any]], ArgsT]
    run: Callable[[ToolContext, ResolvedCaller, ArgsT, CancelToken], str]
    mode: Mode
    budget: Budget
    card: Callable[[dict[str, Any]], dict[str, Any]]
    placement: Placement = "thread"

    @property
    def exclusive(self) -> bool:
        return self.mode == "exclusive"

    @property
    def on_loop(self) -> bool:
        return self.placement == "loop"


def _registry() -> dict[str, Tool[Any]]:
    from worker.tools import event_read, event_search, event_trace, session_search, session_trace

    declared: list[Tool[Any]] = [
        session_search.TOOL,
        event_search.TOOL,
        session_trace.TOOL,
        event_trace.TOOL,
        event_read.TOOL,
    ]
    by_name = {tool.name: tool for tool in declared}
    if tuple(by_name) != TOOL_NAMES:
        raise AssertionError(f"registered tools {tuple(by_name)} != schemas.json {TOOL_NAMES}")
    return by_name


TOOLS: Final[Mapping[str, Tool[Any]]] = _registry()


def lookup(name: object) -> Tool[Any] | UnknownToolError:
    """The tool called ``name``, or the one unknown-tool error (``INVALID_ARGS`` naming
    it and the known tools): the only place a tool name is decided. A ``Tool`` (a
    transport that decided already, e.g. MCP) is taken as it is."""
    if isinstance(name, Tool):
        return name
    tool = TOOLS.get(name) if isinstance(name, str) else None
    if tool is None:
        return unknown_tool(name, tuple(TOOLS))
    return tool


def parse_arguments(tool: Tool[Any], arguments: Any) -> Any:
    """Bound-check, then schema-check ``arguments`` (every violation, upstream's
    wording), then parse them."""
    violations = bound_violations(arguments) or schema_violations(tool.name, arguments)
    if violations:
        raise InvalidArgsError(violations)
    return tool.parse(arguments)
