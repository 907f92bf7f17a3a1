"""One decoded tool call, whatever its transport, and the one computation of its deadline
(step 1 and 2 of ``worker.calls.pipeline``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from worker.authn.binding import Binding
from worker.authn.principal import Principal
from worker.calls.limits import ToolLimits
from worker.contract.deadline import Deadline
from worker.contract.envelopes import HttpCall, ToolRequest
from worker.tools.access import Caller

if TYPE_CHECKING:
    from worker.tools.registry import Tool

MAX_CLOCK_SKEW_MS: Final = 5000  # how far ahead of this clock a request may say it was sent


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One decoded call, whatever the transport.

    ``sent_ms`` is when the caller sent it (wall clock, e.g. the record timestamp); the
    deadline counts from there. ``min_seq`` asks for read-your-writes.
    """

    id: str
    tool: Any
    arguments: Any
    caller: Caller | None
    min_seq: int | None = None
    timeout_ms: int | None = None
    sent_ms: float | None = None
    token: str | None = None
    workspace_key: str | None = None  # the routing key the host sent it under
    source_agents: frozenset[str] | None = None  # session_search's source-agent filter
    # the envelope a caller token must be bound to (derived from the fields above)
    binding: Binding | None = field(default=None, compare=False)

    @classmethod
    def from_request(
        cls,
        request: ToolRequest | HttpCall,
        *,
        sent_ms: float | None,
        workspace_key: str | None = None,
        request_id: str | None = None,
        source_agents: frozenset[str] | None = None,
    ) -> ToolCall:
        """A request envelope as a call (no ``caller.session_id``: no caller); an ``HttpCall``
        (``serve`` verifies no caller token: its bearer token guards the API) is unbound."""
        ref, rid, caller = request.caller, request_id or request.id, None
        assert rid is not None, "an HttpCall without an id is given one"
        if ref is not None and ref.session_id is not None:
            caller = Caller(ref.session_id, ref.step_seq)
        binding = Binding(request) if isinstance(request, ToolRequest) else None
        return cls(
            rid,
            request.tool,
            request.arguments,
            caller,
            min_seq=None if ref is None else ref.min_seq,
            timeout_ms=request.timeout_ms,
            sent_ms=sent_ms,
            token=None if ref is None else ref.token,
            workspace_key=workspace_key,
            source_agents=source_agents,
            binding=binding,
        )


# A partitioned node's check that a call is its partition's, after authentication (step 3):
# it raises the call's refusal.
Route = Callable[[ToolCall, Principal | None], None]


def deadline_for(
    limits: ToolLimits, tool: Tool[Any] | None, timeout_ms: Any, sent_ms: float | None
) -> Deadline:
    """The one deadline computation: ``timeout_ms`` (ignored unless an int), capped by the
    tool's budget (``searchTimeoutMs`` for searches) and ``max_timeout_ms``, counted from
    ``sent_ms``; a ``sent_ms`` more than ``MAX_CLOCK_SKEW_MS`` in the future (a producer
    may set any CreateTime) is clamped to now, so no deadline outlives the cap."""
    budget = limits.max_timeout_ms
    if tool is not None and tool.budget == "search":
        budget = min(budget, limits.search_timeout_ms)
    if isinstance(timeout_ms, int) and not isinstance(timeout_ms, bool):
        budget = min(budget, timeout_ms)
    now_ms = time.time() * 1000.0
    if sent_ms is None or sent_ms > now_ms + MAX_CLOCK_SKEW_MS:
        return Deadline.after(budget)  # a far-future timestamp counts from now
    age_s = (now_ms - sent_ms) / 1000.0
    return Deadline.after(budget, start=time.monotonic() - age_s)
