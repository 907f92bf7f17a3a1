"""Tool-level errors (SPEC §9.4-§9.11, deliberate difference 6).

``HarnessError`` is the root of every error a tool raises on purpose: its code and
message reach the model verbatim (``Error: <message>``). Service failures never do:
the boundary (``worker.contract.boundary``) replaces them with a fixed ``HarnessError``.
At the reply boundary an error becomes a plain ``ToolFailure`` value.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from indexer.errors import ErrorCode, SessionqError

MISSING_AGENT: Final = ErrorCode.MISSING_AGENT
UNAUTHORIZED: Final = ErrorCode.UNAUTHORIZED
NO_CURRENT_STEP: Final = ErrorCode.NO_CURRENT_STEP
TOOL_FAILED: Final = ErrorCode.TOOL_FAILED
INVALID_ARGS: Final = ErrorCode.INVALID_ARGS
TOOL_TIMEOUT: Final = ErrorCode.TOOL_TIMEOUT
TOOL_CANCELLED: Final = ErrorCode.TOOL_CANCELLED
INVALID_QUERY: Final = ErrorCode.INVALID_QUERY
INVALID_FILTER: Final = ErrorCode.INVALID_FILTER
SESSION_NOT_FOUND: Final = ErrorCode.SESSION_NOT_FOUND
CALLER_UNAUTHENTICATED: Final = ErrorCode.CALLER_UNAUTHENTICATED
BUSY: Final = ErrorCode.BUSY
MISROUTED: Final = ErrorCode.MISROUTED

UNAUTHORIZED_MESSAGE: Final = "session target is outside the caller workspace"
UNAUTHENTICATED_MESSAGE: Final = "the caller of this request is not authenticated"
TOOL_FAILED_MESSAGE: Final = "session query operation failed"
CANCELLED_MESSAGE: Final = "tool call was cancelled"
BUSY_MESSAGE: Final = "too many calls of this host or workspace are pending; try again later"
UNSERVED_MESSAGE: Final = "this call's partition is changing owner; try again shortly"


@dataclass(frozen=True, slots=True)
class ToolFailure:
    """A failed call as the model sees it: a closed-set ``code`` and its ``message``."""

    code: str
    message: str

    @property
    def text(self) -> str:
        """The single text block of an error result (SPEC §10.6)."""
        return f"Error: {self.message}"


class HarnessError(SessionqError):
    """A tool-owned failure whose code and message are shown to the model unchanged."""

    code = TOOL_FAILED

    def failure(self) -> ToolFailure:
        return ToolFailure(self.code, self.message)


class UnknownToolError(HarnessError):
    """A call naming no session-query tool (``unknown_tool``): a transport that shows it
    its own way (HTTP 404, MCP's invalid-params error) tells it by this type."""

    code = INVALID_ARGS


class InvalidArgsError(HarnessError):
    """Arguments that violate the tool's JSON schema (the runtime's check upstream)."""

    code = INVALID_ARGS

    def __init__(self, violations: list[str]) -> None:
        super().__init__(f"invalid arguments: {'; '.join(violations)}")
        self.violations = violations


class ToolAbortError(HarnessError):
    """The call was cancelled or passed its deadline.

    ``reason`` is the raw cancellation reason (echoed unchanged in the reply); it is
    ``None`` for a deadline.
    """

    def __init__(self, failure: ToolFailure, reason: Any = None) -> None:
        super().__init__(failure.message, failure.code)
        self.reason = reason


def caller_unauthenticated() -> HarnessError:
    """The one refusal of a request whose host did not prove it speaks for the caller
    (sessionq addition to the closed set); it never names a session."""
    return HarnessError(UNAUTHENTICATED_MESSAGE, CALLER_UNAUTHENTICATED)


def misrouted(why: str) -> HarnessError:
    """A partitioned node's refusal of another partition's call (sessionq addition to
    the closed set); only an authenticated caller gets it, since ``why`` names the
    partition its workspace routes to."""
    return HarnessError(why, MISROUTED)


class BusyError(HarnessError):
    """A call beyond its host's or workspace's admission share (sessionq addition to the
    closed set); ``bound`` ("host" or "workspace") is for metrics, not the message."""

    code = BUSY

    def __init__(self, bound: str) -> None:
        super().__init__(BUSY_MESSAGE)
        self.bound = bound


def busy(bound: str) -> BusyError:
    return BusyError(bound)


def missing_agent() -> HarnessError:
    return HarnessError("session query tools require an agent-bound caller", MISSING_AGENT)


def unauthorized() -> HarnessError:
    """The fixed workspace refusal; it never names a session (SPEC §9.5)."""
    return HarnessError(UNAUTHORIZED_MESSAGE, UNAUTHORIZED)


def no_workspace() -> HarnessError:
    return HarnessError(
        "cross-session search is unavailable because the caller session has no workspace",
        UNAUTHORIZED,
    )


def no_current_step() -> HarnessError:
    return HarnessError("current-session search requires an active step boundary", NO_CURRENT_STEP)


def tool_failed() -> HarnessError:
    """The generic sanitized failure: nothing about the cause reaches the model."""
    return HarnessError(TOOL_FAILED_MESSAGE, TOOL_FAILED)


def invalid_query(message: str) -> HarnessError:
    return HarnessError(message, INVALID_QUERY)


def invalid_filter(message: str) -> HarnessError:
    return HarnessError(message, INVALID_FILTER)


def timeout_failure(budget_ms: int) -> ToolFailure:
    return ToolFailure(TOOL_TIMEOUT, f"tool call timed out after {budget_ms}ms")


UNKNOWN_TOOL_MESSAGE: Final = "invalid arguments: unknown session query tool"
_SHOWN_NAME_CHARS: Final = 64


def unknown_tool(name: object, known: Sequence[str]) -> UnknownToolError:
    """A call naming no session-query tool: ``INVALID_ARGS`` naming the tool (JSON-quoted
    and cut to ``_SHOWN_NAME_CHARS``: it is host input) and the known ones."""
    if isinstance(name, str):
        shown = name if len(name) <= _SHOWN_NAME_CHARS else name[:_SHOWN_NAME_CHARS] + "…"
        what = json.dumps(shown, ensure_ascii=False)
    else:
        what = "(not a string)"
    return UnknownToolError(f"{UNKNOWN_TOOL_MESSAGE} {what}; known tools: {', '.join(known)}")


def cancellation_failure(reason: Any) -> ToolFailure:
    """What a cancellation ``reason`` shows the model (deliberate difference 6).

    A reason carrying a string ``code`` and a string ``message`` (a JSON object, or any
    object with such attributes) yields exactly those; anything else is
    ``TOOL_CANCELLED``. Hostile reasons (throwing accessors) count as "anything else".
    """
    try:
        if isinstance(reason, dict):
            code, message = reason.get("code"), reason.get("message")
        else:
            code = getattr(reason, "code", None)
            message = getattr(reason, "message", None)
        if isinstance(code, str) and isinstance(message, str):
            return ToolFailure(str.__str__(code), str.__str__(message))
    except Exception:  # a hostile reason still cancels, with the fixed code
        return ToolFailure(TOOL_CANCELLED, CANCELLED_MESSAGE)
    return ToolFailure(TOOL_CANCELLED, CANCELLED_MESSAGE)
