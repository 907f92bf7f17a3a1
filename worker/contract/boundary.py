"""The model boundary around every query-service call (SPEC §9.10).

Whatever a service call raises, the model sees only a fixed, table-mapped error:
service messages can name sessions outside the caller's workspace, so they go to the
log (logger ``sessionq.tools``) and never into a reply. Cancellation is checked
before and after each call and wins over the call's own outcome, unlogged.

Service methods are synchronous, and so is a tool's whole run (authorization, its
service calls, rendering): ``in_thread`` hands it to a worker thread once, so the event
loop keeps serving cancel records and other requests meanwhile (a tool of fixed bounded
work runs on the loop instead: ``Tool.placement``), and ``call`` wraps each service
call inside it. A started run is always awaited to completion: threads cannot
be interrupted, which is exactly upstream's "wait for the service to settle"; the token
is checked around every service call, from the running thread.
"""

from __future__ import annotations

import asyncio
import logging
import traceback
from collections.abc import Callable
from typing import Final, TypeVar

from indexer.errors import ErrorCode, SessionQueryError
from worker.contract.deadline import CancelToken
from worker.contract.errors import (
    TOOL_FAILED,
    UNAUTHORIZED,
    HarnessError,
    tool_failed,
    unauthorized,
)

__all__ = ["LOG", "UNPRINTABLE", "call", "diagnostic", "in_thread", "sanitize"]

LOG: Final = logging.getLogger("sessionq.tools")
UNPRINTABLE: Final = "[unprintable session query failure]"
CIRCULAR: Final = "[circular error cause]"

# Service code -> (model-visible code, fixed message). Codes mapped to TOOL_FAILED fall
# through to the generic error.
SAFE_FAILURES: Final[dict[str, tuple[str, str]]] = {
    ErrorCode.ABORTED: (ErrorCode.ABORTED, "session query was cancelled"),
    ErrorCode.CORRUPT_SESSION: (
        ErrorCode.CORRUPT_SESSION,
        "session event history is corrupt",
    ),
    ErrorCode.EVENT_NOT_FOUND: (
        ErrorCode.EVENT_NOT_FOUND,
        "session event was not found",
    ),
    ErrorCode.INDEX_FAILED: (
        ErrorCode.INDEX_FAILED,
        "session search index is unavailable",
    ),
    ErrorCode.INVALID_CONFIG: (TOOL_FAILED, "session query operation failed"),
    ErrorCode.INVALID_CURSOR: (
        ErrorCode.INVALID_CURSOR,
        "session search continuation is invalid",
    ),
    ErrorCode.INVALID_FILTER: (
        ErrorCode.INVALID_FILTER,
        "session query filters were rejected",
    ),
    ErrorCode.INVALID_LIMIT: (
        ErrorCode.INVALID_LIMIT,
        "session query result limit was rejected",
    ),
    ErrorCode.INVALID_QUERY: (ErrorCode.INVALID_QUERY, "session query was rejected"),
    ErrorCode.INVALID_LINEAGE: (
        ErrorCode.INVALID_LINEAGE,
        "session lineage is invalid",
    ),
    ErrorCode.INVALID_SURFACE: (
        ErrorCode.INVALID_SURFACE,
        "session event history is invalid",
    ),
    ErrorCode.INVALID_WINDOW: (
        ErrorCode.INVALID_WINDOW,
        "session event window is invalid",
    ),
    ErrorCode.PERSISTENCE_FAILED: (
        ErrorCode.PERSISTENCE_FAILED,
        "session history storage is unavailable",
    ),
    ErrorCode.SEARCH_DISABLED: (
        ErrorCode.SEARCH_DISABLED,
        "session search is disabled in this deployment",
    ),
    ErrorCode.SESSION_NOT_FOUND: (ErrorCode.SESSION_NOT_FOUND, "session was not found"),
    ErrorCode.STALE_CURSOR: (
        ErrorCode.STALE_CURSOR,
        "session history changed while paging; retry the complete search call",
    ),
    ErrorCode.SOURCE_CONFLICT: (TOOL_FAILED, "session query operation failed"),
}

# Never swallowed: they steer the interpreter and the event loop, not the service.
_PASSTHROUGH: Final = (asyncio.CancelledError, KeyboardInterrupt, SystemExit, GeneratorExit)

T = TypeVar("T")


def _describe(error: BaseException) -> str:
    """One exception's own traceback text (its cause chain is rendered by the caller)."""
    return "".join(
        traceback.format_exception(type(error), error, error.__traceback__, chain=False)
    ).rstrip("\n")


def _render(error: object) -> str:
    if not isinstance(error, BaseException):
        return str(error)
    parts: list[str] = []
    seen: set[int] = set()
    current: object = error
    while isinstance(current, BaseException) and id(current) not in seen:
        seen.add(id(current))
        parts.append(_describe(current))
        current = current.__cause__
    if isinstance(current, BaseException):
        parts.append(CIRCULAR)
    elif current is not None:
        parts.append(_render(current))
    return "\nCaused by: ".join(parts)


def diagnostic(error: object) -> str:
    """Log text of a failure: traceback, then each ``__cause__`` (``Caused by:``).

    A cause cycle ends with ``[circular error cause]``; anything that makes rendering
    raise (hostile ``__str__``/``__traceback__``/``__cause__``) yields the placeholder.
    """
    try:
        return _render(error)
    except Exception:  # rendering must never fail the call; the placeholder says why
        return UNPRINTABLE


def sanitize(operation: str, error: object) -> HarnessError:
    """Log ``error`` and return the model-safe error for it (SPEC §9.10 table).

    Logging and classification run inside one guard: if either raises, the result is
    the generic ``SESSION_QUERY_TOOL_FAILED``.
    """
    text = diagnostic(error)
    try:
        LOG.warning("tool-session-query: %s failed: %s", operation, text)
        if isinstance(error, SessionQueryError):
            code = error.code
            mapped = SAFE_FAILURES.get(code) if isinstance(code, str) else None
            if mapped is not None and mapped[0] != TOOL_FAILED:
                return HarnessError(mapped[1], mapped[0])
        if isinstance(error, HarnessError) and error.code == UNAUTHORIZED:
            return unauthorized()
    except Exception:  # a hostile error or a failing logger: nothing is known to be safe
        return tool_failed()
    return tool_failed()


def call(token: CancelToken, operation: str, fn: Callable[[], T]) -> T:
    """Run one service call under ``token``, in the calling thread; failures come back
    sanitized.

    Order: abort check; the call (to completion); on failure abort check (cancellation
    wins, unlogged) then ``sanitize``; on success abort check again.
    """
    token.check()
    try:
        value = fn()
    except _PASSTHROUGH:
        raise
    except BaseException as error:  # every service failure is contained here
        token.check()
        raise sanitize(operation, error) from None
    token.check()
    return value


async def in_thread(fn: Callable[[], T]) -> T:
    """``fn()`` in a worker thread of the loop's default executor, awaited to completion:
    the one thread hand-off of a tool call (its exceptions propagate as raised)."""
    return await asyncio.get_running_loop().run_in_executor(None, fn)
