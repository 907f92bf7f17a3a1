"""Cancellation and deadlines for one tool call (SPEC §9.3, deliberate difference 6).

A ``CancelToken`` plays the part of upstream's execution ``AbortSignal``: the caller
cancels it with a raw reason, a ``Deadline`` aborts it with ``TOOL_TIMEOUT``, and the
first abort wins. Service calls are never interrupted; the boundary checks the token
before and after each one, so a call always waits for the service to settle.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

from worker.contract.errors import (
    ToolAbortError,
    ToolFailure,
    cancellation_failure,
    timeout_failure,
)


@dataclass(frozen=True, slots=True)
class Deadline:
    """``budget_ms`` after a monotonic start; ``budget_ms`` is what the timeout message shows."""

    budget_ms: int
    expires_at: float

    @classmethod
    def after(cls, budget_ms: int, *, start: float | None = None) -> Deadline:
        """A deadline ``budget_ms`` after ``start`` (``time.monotonic()`` seconds; default now)."""
        begin = time.monotonic() if start is None else start
        return cls(budget_ms, begin + budget_ms / 1000.0)

    def remaining(self) -> float:
        """Seconds left; zero or negative once expired."""
        return self.expires_at - time.monotonic()

    def expired(self) -> bool:
        return time.monotonic() >= self.expires_at

    def failure(self) -> ToolFailure:
        return timeout_failure(self.budget_ms)


class CancelToken:
    """A one-shot cancellation flag with a reason; optionally linked to a parent and a deadline.

    ``cancel`` may be called from any thread. The first abort (own cancel, the parent's,
    or the deadline) fixes the reason for good.
    """

    def __init__(self, *, parent: CancelToken | None = None, deadline: Deadline | None = None):
        self._lock = threading.Lock()
        self._parent = parent
        self._deadline = deadline
        self._failure: ToolFailure | None = None
        self._reason: Any = None

    def child(self, deadline: Deadline | None = None) -> CancelToken:
        """A token cancelled with this one, plus its own optional deadline."""
        return CancelToken(parent=self, deadline=deadline)

    @property
    def deadline(self) -> Deadline | None:
        return self._deadline

    def cancel(self, reason: Any = None) -> bool:
        """Cancel with a raw ``reason``; returns False when the token was already aborted."""
        return self._abort(cancellation_failure(reason), reason)

    def _abort(self, failure: ToolFailure, reason: Any) -> bool:
        with self._lock:
            if self._failure is not None:
                return False
            self._failure, self._reason = failure, reason
            return True

    def _poll(self) -> ToolFailure | None:
        """Adopt the parent's abort, then the deadline's, when this token is still clear
        (a call polls a dozen times: the clear path is a few attribute reads)."""
        if self._failure is not None:
            return self._failure
        parent = self._parent
        if parent is not None:
            parent_failure = parent._poll()
            if parent_failure is not None:
                self._abort(parent_failure, parent._reason)
                return self._failure
        deadline = self._deadline
        if deadline is not None and time.monotonic() >= deadline.expires_at:
            self._abort(deadline.failure(), None)
        return self._failure

    @property
    def cancelled(self) -> bool:
        return self._poll() is not None

    @property
    def failure(self) -> ToolFailure | None:
        """What the model sees for this abort, or None while the call may go on."""
        return self._poll()

    @property
    def reason(self) -> Any:
        """The raw reason given to ``cancel`` (None for a deadline or while not aborted)."""
        self._poll()
        return self._reason

    def check(self) -> None:
        """Raise the abort (``ToolAbortError`` carrying the raw reason) when aborted."""
        failure = self._poll()
        if failure is not None:
            raise ToolAbortError(failure, self._reason)
