"""The model-boundary sanitizer (SPEC §9.10, scenarios 66-77) and the call wrapper."""

from __future__ import annotations

import logging
import threading
from typing import Any, NoReturn

import pytest

from indexer.errors import SessionQueryError
from worker.contract import boundary
from worker.contract.boundary import (
    SAFE_FAILURES,
    UNPRINTABLE,
    call,
    diagnostic,
    in_thread,
    sanitize,
)
from worker.contract.deadline import CancelToken
from worker.contract.errors import HarnessError, ToolAbortError

GENERIC = ("SESSION_QUERY_TOOL_FAILED", "session query operation failed")


def outcome(error: HarnessError) -> tuple[str, str]:
    return error.code, error.message


def logged(caplog: pytest.LogCaptureFixture) -> str:
    return "\n".join(r.getMessage() for r in caplog.records if r.name == "sessionq.tools")


@pytest.mark.parametrize(("code", "mapped"), sorted(SAFE_FAILURES.items()))
def test_every_service_code_maps_to_its_fixed_message(code: str, mapped: tuple[str, str]) -> None:
    result = sanitize("op", SessionQueryError("secret detail about hidden-7", code))
    assert outcome(result) == (mapped if mapped[0] != "SESSION_QUERY_TOOL_FAILED" else GENERIC)
    assert "hidden-7" not in result.message


def test_table_holds_the_spec_rows() -> None:
    assert SAFE_FAILURES["SESSION_QUERY_STALE_CURSOR"][1] == (
        "session history changed while paging; retry the complete search call"
    )
    assert SAFE_FAILURES["SESSION_QUERY_SOURCE_CONFLICT"][0] == "SESSION_QUERY_TOOL_FAILED"
    assert SAFE_FAILURES["SESSION_QUERY_INVALID_CONFIG"][0] == "SESSION_QUERY_TOOL_FAILED"
    assert len(SAFE_FAILURES) == 17


def test_unauthorized_harness_error_keeps_only_the_fixed_message() -> None:
    error = HarnessError("hidden-9 is elsewhere", "SESSION_QUERY_TOOL_UNAUTHORIZED")
    result = sanitize("op", error)
    assert outcome(result) == (
        "SESSION_QUERY_TOOL_UNAUTHORIZED", "session target is outside the caller workspace"
    )


@pytest.mark.parametrize(
    "error",
    [
        ValueError("plain"),
        HarnessError("title backend failed", "TITLE_BACKEND"),
        HarnessError("not a query error", "SESSION_QUERY_EVENT_NOT_FOUND"),
        SessionQueryError("unknown code", "__proto__"),
        SessionQueryError("odd", "SESSION_QUERY_TOOL_FAILED"),
        "string failure",
        42,
    ],
)
def test_anything_else_is_generic(error: object) -> None:
    assert outcome(sanitize("op", error)) == GENERIC


def test_log_carries_operation_and_full_diagnostic(caplog: pytest.LogCaptureFixture) -> None:
    """66: a typed error with an Error cause: both secrets logged, none returned."""
    try:
        try:
            raise RuntimeError("inner secret")
        except RuntimeError as inner:
            raise SessionQueryError("outer secret", "SESSION_QUERY_SOURCE_CONFLICT") from inner
    except SessionQueryError as outer:
        error = outer
    with caplog.at_level(logging.WARNING, logger="sessionq.tools"):
        result = sanitize("session search", error)
    assert outcome(result) == GENERIC
    text = logged(caplog)
    assert text.startswith("tool-session-query: session search failed: Traceback")
    assert "outer secret" in text and "inner secret" in text
    assert "\nCaused by: Traceback" in text


class HostileClass:
    """68: every attribute lookup (incl. ``__class__``) raises."""

    def __getattribute__(self, name: str) -> NoReturn:
        raise RuntimeError("hostile")


class StacklessTraceback(Exception):
    """69: the traceback accessor throws."""

    @property
    def __traceback__(self) -> NoReturn:  # type: ignore[override]
        raise RuntimeError("no stack")


class ThrowingCause(Exception):
    """70: the cause accessor throws."""

    @property
    def __cause__(self) -> NoReturn:  # type: ignore[override]
        raise RuntimeError("no cause")


class Unprintable:
    """71: string conversion throws."""

    def __str__(self) -> str:
        raise RuntimeError("no str")


class ThrowingCode(SessionQueryError):
    """72: the code accessor throws."""

    @property
    def code(self) -> NoReturn:  # type: ignore[override]
        raise RuntimeError("no code")


class NonStringCode:
    def __str__(self) -> str:
        raise RuntimeError("no str")


@pytest.mark.parametrize(
    "make",
    [HostileClass, lambda: StacklessTraceback("secret"), lambda: ThrowingCause("secret"),
     Unprintable],
    ids=["hostile-proxy", "stack-getter-throws", "cause-getter-throws", "str-throws"],
)
def test_unprintable_failures_log_the_placeholder(
    make: Any, caplog: pytest.LogCaptureFixture
) -> None:
    error = make()
    assert diagnostic(error) == UNPRINTABLE
    with caplog.at_level(logging.WARNING, logger="sessionq.tools"):
        assert outcome(sanitize("op", error)) == GENERIC
    assert logged(caplog) == f"tool-session-query: op failed: {UNPRINTABLE}"


def test_throwing_code_getter_is_generic_but_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="sessionq.tools"):
        assert outcome(sanitize("op", ThrowingCode("primary message"))) == GENERIC
    assert "primary message" in logged(caplog)


def test_non_string_code_is_generic_but_logged(caplog: pytest.LogCaptureFixture) -> None:
    error = SessionQueryError("typed message")
    error.code = NonStringCode()  # type: ignore[assignment]
    with caplog.at_level(logging.WARNING, logger="sessionq.tools"):
        assert outcome(sanitize("op", error)) == GENERIC
    assert "typed message" in logged(caplog)


def test_typed_error_with_unprintable_cause_keeps_its_mapping(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """75."""
    error = SessionQueryError("storage down", "SESSION_QUERY_PERSISTENCE_FAILED")
    error.__cause__ = StacklessTraceback("nested")
    with caplog.at_level(logging.WARNING, logger="sessionq.tools"):
        result = sanitize("op", error)
    assert outcome(result) == (
        "SESSION_QUERY_PERSISTENCE_FAILED", "session history storage is unavailable"
    )
    assert UNPRINTABLE in logged(caplog)


def test_cyclic_causes_end_with_a_marker() -> None:
    """76."""
    outer, inner = SessionQueryError("outer msg", "X"), ValueError("inner msg")
    outer.__cause__, inner.__cause__ = inner, outer
    text = diagnostic(outer)
    assert "outer msg" in text and "inner msg" in text
    assert text.endswith("\nCaused by: [circular error cause]")
    assert outcome(sanitize("op", outer)) == GENERIC


def test_unraised_error_renders_its_type_and_message() -> None:
    assert diagnostic(HarnessError("title backend failed", "X")) == (
        "worker.contract.errors.HarnessError: title backend failed"
    )
    assert diagnostic("string failure") == "string failure"


def test_throwing_logger_yields_generic_and_is_called_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """77."""
    calls: list[tuple[Any, ...]] = []

    def warning(*args: Any) -> None:
        calls.append(args)
        raise RuntimeError("logger down")

    monkeypatch.setattr(boundary.LOG, "warning", warning)
    error = SessionQueryError("secret", "SESSION_QUERY_EVENT_NOT_FOUND")
    assert outcome(sanitize("op", error)) == GENERIC
    assert len(calls) == 1


# ---- call(token, operation, fn) -----------------------------------------------------------------
def test_call_returns_the_value_in_the_calling_thread() -> None:
    assert call(CancelToken(), "op", threading.get_ident) == threading.get_ident()


async def test_in_thread_runs_off_the_event_loop_and_raises_as_raised() -> None:
    loop_thread = threading.get_ident()
    assert await in_thread(threading.get_ident) != loop_thread

    def fail() -> None:
        raise ToolAbortError(HarnessError("stop", "SESSION_QUERY_ABORTED").failure(), "why")

    with pytest.raises(ToolAbortError) as info:
        await in_thread(fail)
    assert info.value.reason == "why"


def test_call_sanitizes_failures() -> None:
    def fail() -> None:
        raise SessionQueryError("hidden", "SESSION_QUERY_INVALID_LINEAGE")

    with pytest.raises(HarnessError) as info:
        call(CancelToken(), "session lineage trace", fail)
    assert outcome(info.value) == ("SESSION_QUERY_INVALID_LINEAGE", "session lineage is invalid")
    assert info.value.__cause__ is None


def test_pre_cancelled_token_skips_the_call() -> None:
    token = CancelToken()
    token.cancel({"code": "SESSION_QUERY_ABORTED", "message": "stop"})
    ran: list[bool] = []
    with pytest.raises(ToolAbortError) as info:
        call(token, "op", lambda: ran.append(True))
    assert ran == []
    assert outcome(info.value) == ("SESSION_QUERY_ABORTED", "stop")


def test_cancellation_during_the_call_wins_over_success_and_failure(
    caplog: pytest.LogCaptureFixture,
) -> None:
    for succeed in (True, False):
        token = CancelToken()
        reason = SessionQueryError("lineage trace cancelled first", "SESSION_QUERY_ABORTED")

        def work(succeed: bool = succeed, token: CancelToken = token,
                 reason: SessionQueryError = reason) -> str:
            token.cancel(reason)
            if succeed:
                return "value"
            raise SessionQueryError("secret", "SESSION_QUERY_INVALID_LINEAGE")

        with (
            caplog.at_level(logging.WARNING, logger="sessionq.tools"),
            pytest.raises(ToolAbortError) as info,
        ):
            call(token, "op", work)
        assert outcome(info.value) == ("SESSION_QUERY_ABORTED", "lineage trace cancelled first")
        assert info.value.reason is reason
    assert logged(caplog) == ""
