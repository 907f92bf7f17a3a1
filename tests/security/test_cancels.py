"""Cancels cannot be used to grow the worker's memory or its replies, and reach every
copy of a redelivered request (``worker.calls.pipeline``: ``Pipeline.cancel``,
``bounded_reason``, ``EarlyCancels``). No broker: the pipeline alone."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

from worker.calls.cancels import (
    CANCEL_REASON_MAX_BYTES,
    EARLY_CANCEL_BYTES,
    EARLY_CANCELS,
    OVERSIZED_REASON,
    EarlyCancels,
    bounded_reason,
)
from worker.calls.pipeline import Pipeline
from worker.calls.tool_call import ToolCall
from worker.contract.outcome import ToolReply
from worker.tools.access import Caller

WAIT_S = 5.0


class NeverIndexed:
    """A query service whose caller never shows up: a call waits (in flight, holding its
    cancel token) until it is cancelled or its deadline passes."""

    def last_seq(self, session_id: str) -> int | None:
        return None

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the service was used: {name}")


def waiting_pipeline() -> Pipeline:
    return Pipeline(NeverIndexed(), wait_for_caller=True)  # type: ignore[arg-type]


def waiting_call(request_id: str) -> ToolCall:
    return ToolCall(request_id, "session_trace", {}, Caller("caller"), timeout_ms=30_000)


async def in_flight(pipeline: Pipeline, request_id: str, copies: int) -> None:
    async def all_there() -> None:
        while len(pipeline.in_flight._calls.get(request_id, ())) < copies:
            await asyncio.sleep(0.001)

    await asyncio.wait_for(all_there(), WAIT_S)


def cancelled(reply: ToolReply) -> bool:
    return reply.error is not None and reply.error.code == "TOOL_CANCELLED"


def json_size(value: Any) -> int:
    return len(orjson.dumps(value))


# ---- every in-flight copy ------------------------------------------------------------------------
async def test_a_cancel_reaches_every_in_flight_copy_of_a_redelivered_request() -> None:
    pipeline = waiting_pipeline()
    first = asyncio.create_task(pipeline.answer(waiting_call("r1")))
    second = asyncio.create_task(pipeline.answer(waiting_call("r1")))
    await in_flight(pipeline, "r1", 2)
    pipeline.cancel("r1", "stop")
    replies = await asyncio.wait_for(asyncio.gather(first, second), WAIT_S)
    assert all(cancelled(r) and r.cancel_reason == "stop" for r in replies), replies
    assert pipeline.in_flight._calls == {}
    assert len(pipeline.in_flight.early) == 0  # it reached calls: nothing remembered


async def test_a_finished_copy_forgets_only_its_own_token() -> None:
    pipeline = waiting_pipeline()
    short = asyncio.create_task(
        pipeline.answer(ToolCall("r1", "session_trace", {}, Caller("caller"), timeout_ms=20))
    )
    long = asyncio.create_task(pipeline.answer(waiting_call("r1")))
    await in_flight(pipeline, "r1", 2)
    timed_out = await asyncio.wait_for(short, WAIT_S)
    assert timed_out.error is not None and timed_out.error.code == "TOOL_TIMEOUT"
    assert len(pipeline.in_flight._calls["r1"]) == 1  # the other copy is still cancellable
    pipeline.cancel("r1", "late")
    reply = await asyncio.wait_for(long, WAIT_S)
    assert cancelled(reply) and reply.cancel_reason == "late"
    assert pipeline.in_flight._calls == {}


# ---- the reason bound ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "reason",
    [
        None,
        "stop",
        {"code": "SESSION_QUERY_ABORTED", "message": "session query was cancelled"},
        "x" * (CANCEL_REASON_MAX_BYTES - 2),  # exactly the limit with its quotes
        ["a"] * 100,
    ],
)
def test_a_reason_within_the_limit_is_kept_as_is(reason: Any) -> None:
    assert json_size(reason) <= CANCEL_REASON_MAX_BYTES
    assert bounded_reason(reason) is reason


@pytest.mark.parametrize(
    "text",
    [
        "x" * (CANCEL_REASON_MAX_BYTES - 1),  # one byte over, with its quotes
        "y" * 1_000_000,
        "é" * 5_000,  # 2 bytes each in JSON
        "\u0001" * 5_000,  # 6 bytes each in JSON (\u0001)
        "ok " + "🙂" * 2_000,
    ],
)
def test_a_long_string_reason_is_cut_to_a_prefix_that_fits(text: str) -> None:
    bounded = bounded_reason(text)
    assert isinstance(bounded, str) and bounded.endswith("…")
    prefix = bounded.removesuffix("…")
    assert text.startswith(prefix) and prefix
    assert json_size(bounded) <= CANCEL_REASON_MAX_BYTES
    # the longest such prefix: one more character would not fit
    assert json_size(text[: len(prefix) + 1] + "…") > CANCEL_REASON_MAX_BYTES


@pytest.mark.parametrize(
    "reason",
    [
        {"code": "SESSION_QUERY_ABORTED", "message": "m" * 2_000},
        ["z" * 600, "z" * 600],
        list(range(1_000)),
        object(),  # not JSON: it could never be echoed
    ],
)
def test_any_other_oversized_reason_becomes_the_fixed_marker(reason: Any) -> None:
    assert bounded_reason(reason) == OVERSIZED_REASON
    assert json_size(OVERSIZED_REASON) <= CANCEL_REASON_MAX_BYTES


async def test_the_reply_echoes_the_bounded_reason_in_flight_and_early() -> None:
    pipeline = waiting_pipeline()
    huge = "why " * 100_000
    task = asyncio.create_task(pipeline.answer(waiting_call("r1")))
    await in_flight(pipeline, "r1", 1)
    pipeline.cancel("r1", huge)
    reply = await asyncio.wait_for(task, WAIT_S)
    assert reply.cancel_reason == bounded_reason(huge)
    assert json_size(reply.cancel_reason) <= CANCEL_REASON_MAX_BYTES

    big_object = {"code": "X", "message": "m" * 5_000}
    pipeline.cancel("r2", big_object)  # before its request
    early = await pipeline.answer(waiting_call("r2"))
    assert early.cancel_reason == OVERSIZED_REASON
    # the object's code/message no longer apply: the fixed cancellation error
    assert early.error is not None
    assert (early.error.code, early.error.message) == ("TOOL_CANCELLED", "tool call was cancelled")


# ---- the early-cancel cache ----------------------------------------------------------------------
def test_the_documented_bounds() -> None:
    assert (EARLY_CANCELS, EARLY_CANCEL_BYTES, CANCEL_REASON_MAX_BYTES) == (1_000, 1 << 20, 1024)


def test_early_cancels_are_bounded_by_count_oldest_first() -> None:
    cache = EarlyCancels()
    for i in range(EARLY_CANCELS + 10):
        cache.add(f"id-{i}", None)
    assert len(cache) == EARLY_CANCELS
    assert "id-9" not in cache and "id-10" in cache and f"id-{EARLY_CANCELS + 9}" in cache


def test_early_cancels_are_bounded_by_bytes_oldest_first() -> None:
    """Reasons are bounded already, ids are not (a request id has no length limit): long
    ids fill the byte budget long before the count bound."""
    cache = EarlyCancels()
    reason = bounded_reason("r" * 10_000)  # ~1 KiB after the reason bound

    def request_id(i: int) -> str:
        return f"{i:04d}" + "i" * 10_000

    weight = len(request_id(0)) + json_size(reason)
    for i in range(EARLY_CANCELS):
        cache.add(request_id(i), reason)
        assert cache.bytes <= EARLY_CANCEL_BYTES
    kept = EARLY_CANCEL_BYTES // weight
    assert kept < EARLY_CANCELS  # the byte bound, not the count, is what held
    assert len(cache) == kept
    assert request_id(EARLY_CANCELS - kept - 1) not in cache
    assert request_id(EARLY_CANCELS - kept) in cache
    assert cache.bytes == kept * weight


def test_an_entry_is_weighed_by_its_id_and_its_reason_json() -> None:
    cache = EarlyCancels()
    cache.add("é1", {"code": "A", "message": "b"})
    assert cache.bytes == len("é1".encode()) + json_size({"code": "A", "message": "b"})
    assert cache.pop("é1") == {"code": "A", "message": "b"}
    assert cache.bytes == 0 and "é1" not in cache


def test_a_repeated_cancel_replaces_its_entry_and_becomes_the_newest() -> None:
    cache = EarlyCancels(max_entries=2)
    cache.add("a", "first")
    cache.add("b", "x")
    cache.add("a", "second")
    assert cache.bytes == len(b"a") + json_size("second") + len(b"b") + json_size("x")
    cache.add("c", None)  # evicts the oldest: b, since a was renewed
    assert "b" not in cache and cache.pop("a") == "second"


async def test_the_pipeline_stores_bounded_reasons_within_its_budgets() -> None:
    pipeline = waiting_pipeline()
    for i in range(EARLY_CANCELS + 1):
        pipeline.cancel(f"unknown-{i}", "w" * 1_000_000)  # 1 MB each, as sent
    early = pipeline.in_flight.early
    assert len(early) == EARLY_CANCELS and early.bytes <= EARLY_CANCEL_BYTES
    assert "unknown-0" not in early  # the oldest went first
    newest = await pipeline.answer(waiting_call(f"unknown-{EARLY_CANCELS}"))
    assert cancelled(newest)
    assert json_size(newest.cancel_reason) <= CANCEL_REASON_MAX_BYTES
    assert len(early) == EARLY_CANCELS - 1  # consumed by its request
