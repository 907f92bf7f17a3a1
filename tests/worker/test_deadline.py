"""Cancel tokens and deadlines (SPEC §9.3, deliberate difference 6)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from indexer.errors import SessionQueryError
from worker.contract.deadline import CancelToken, Deadline
from worker.contract.errors import ToolAbortError, ToolFailure, cancellation_failure


class Hostile:
    @property
    def code(self) -> str:
        raise RuntimeError("no")


@pytest.mark.parametrize(
    ("reason", "failure"),
    [
        ({"code": "SESSION_QUERY_ABORTED", "message": "parent preauthorization cancelled"},
         ToolFailure("SESSION_QUERY_ABORTED", "parent preauthorization cancelled")),
        (SessionQueryError("x cancelled", "SESSION_QUERY_ABORTED"),
         ToolFailure("SESSION_QUERY_ABORTED", "x cancelled")),
        ({"code": "X", "message": 3}, ToolFailure("TOOL_CANCELLED", "tool call was cancelled")),
        ({"code": 1, "message": "m"}, ToolFailure("TOOL_CANCELLED", "tool call was cancelled")),
        ("user pressed stop", ToolFailure("TOOL_CANCELLED", "tool call was cancelled")),
        (None, ToolFailure("TOOL_CANCELLED", "tool call was cancelled")),
        ([1, 2], ToolFailure("TOOL_CANCELLED", "tool call was cancelled")),
        (Hostile(), ToolFailure("TOOL_CANCELLED", "tool call was cancelled")),
    ],
)
def test_cancellation_reason_semantics(reason: Any, failure: ToolFailure) -> None:
    assert cancellation_failure(reason) == failure
    token = CancelToken()
    token.cancel(reason)
    with pytest.raises(ToolAbortError) as info:
        token.check()
    assert info.value.failure() == failure
    assert info.value.reason is reason


def test_first_abort_wins() -> None:
    token = CancelToken()
    assert token.cancel({"code": "A", "message": "first"})
    assert not token.cancel({"code": "B", "message": "second"})
    assert token.failure == ToolFailure("A", "first")


def test_deadline_aborts_with_tool_timeout() -> None:
    token = CancelToken(deadline=Deadline.after(1234, start=time.monotonic() - 2))
    assert token.cancelled
    assert token.failure == ToolFailure("TOOL_TIMEOUT", "tool call timed out after 1234ms")
    assert token.reason is None


def test_child_follows_its_parent_but_not_the_reverse() -> None:
    parent = CancelToken()
    child = parent.child(Deadline.after(60_000))
    assert not child.cancelled
    parent.cancel({"code": "C", "message": "caller"})
    assert child.failure == ToolFailure("C", "caller")
    other = CancelToken()
    expired_child = other.child(Deadline.after(0))
    assert expired_child.cancelled
    assert not other.cancelled


def test_deadline_remaining_counts_down() -> None:
    deadline = Deadline.after(50)
    assert 0 < deadline.remaining() <= 0.05
    assert not deadline.expired()
