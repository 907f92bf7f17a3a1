"""Deadlines, cancellation and read-your-writes over a real broker (DESIGN.md "Caller,
consistency, deadlines"; SPEC deliberate difference 6).

An indexer and a worker run in this process; requests come from the host client or are
produced raw when the test needs a record timestamp of its own.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import pytest

from tests.builders import first_step, header, plain, user
from tests.fixtures.kafka import KafkaCase
from tests.fixtures.waiting import wait_until
from tests.kafka.harness import (
    Stack,
    create_topics,
    read_topic,
    running_stack,
    session_stack,
)
from tests.kafka.records import request_record
from worker.contract.envelopes import Reply

pytestmark = pytest.mark.kafka

WS = "/deadline/ws"
PEER = header("peer", cwd=WS)
PEER_EVENTS = first_step("the peer remembers a lighthouse")


stack = session_stack(PEER, PEER_EVENTS)


def in_flight(stack: Stack) -> float:
    return stack.metric("sessionq_in_flight_calls")


async def timed_out_by_the_worker(stack: Stack, rid: str, reply: Reply, elapsed: float) -> None:
    """``reply`` is the worker's own 1 s timeout: not before the deadline, and on the
    reply topic (not the client giving up)."""
    assert reply.to_json() == {
        "v": 1,
        "id": rid,
        "ok": False,
        "error": {"code": "TOOL_TIMEOUT", "message": "tool call timed out after 1000ms"},
    }
    assert elapsed >= 0.9, elapsed
    assert rid in (await stack.tap.wait_for([rid], timeout=30))


async def waiting_call(
    stack: Stack, tool: str, arguments: Any, request_id: str
) -> asyncio.Task[Reply]:
    """A call that stays in flight: its caller's events have not arrived, so the worker
    waits (20 s at most) for ``min_seq``."""
    return await start_call(
        stack,
        tool,
        arguments,
        session_id="late-caller",
        min_seq=5,
        timeout_ms=20000,
        routing_key=WS,
        request_id=request_id,
    )


async def start_call(stack: Stack, tool: str, arguments: Any, **kwargs: Any) -> asyncio.Task[Reply]:
    """A client call in its own task, returned once the worker is working on it."""
    before = in_flight(stack)
    task = asyncio.create_task(stack.client.call(tool, arguments, **kwargs))
    await wait_until(
        lambda: in_flight(stack) > before or task.done(),
        timeout=30,
        what="the worker to start the call",
    )
    assert not task.done(), task.result()
    return task


# ---- expired requests ----


async def test_request_already_past_its_deadline_gets_timeout_without_work(stack: Stack) -> None:
    now_ms = int(time.time() * 1000)
    # Would succeed if it ran (the peer traces fine), and the other one would fail with
    # SESSION_NOT_FOUND: a TOOL_TIMEOUT reply shows neither did any work.
    stale_ok = request_record(
        "stale-ok", stack.topics.replies, "session_trace", {}, session_id="peer", timeout_ms=500
    )
    stale_unknown = request_record(
        "stale-unknown",
        stack.topics.replies,
        "session_event_read",
        {"seq": 0},
        session_id="nobody",
        timeout_ms=500,
    )
    # No timeout_ms: a search's own budget (searchTimeoutMs = 30000) applies.
    stale_search = request_record(
        "stale-search", stack.topics.replies, "session_search", {"query": "x"}, session_id="peer"
    )
    fresh = request_record(
        "fresh", stack.topics.replies, "session_trace", {}, session_id="peer", timeout_ms=500
    )
    for record, ts in (
        (stale_ok, now_ms - 60_000),
        (stale_unknown, now_ms - 60_000),
        (stale_search, now_ms - 31_000),
        (fresh, None),
    ):
        await stack.producer.send_json(stack.topics.requests, record, key=WS, timestamp_ms=ts)

    replies = await stack.tap.wait_for(
        ["stale-ok", "stale-unknown", "stale-search", "fresh"], timeout=30
    )
    for rid in ("stale-ok", "stale-unknown"):
        assert replies[rid].to_json() == {
            "v": 1,
            "id": rid,
            "ok": False,
            "error": {"code": "TOOL_TIMEOUT", "message": "tool call timed out after 500ms"},
        }
    assert replies["stale-search"].error is not None
    assert replies["stale-search"].error.code == "TOOL_TIMEOUT"
    assert replies["stale-search"].error.message == "tool call timed out after 30000ms"
    assert replies["fresh"].ok, replies["fresh"]
    assert stack.metric("sessionq_deadline_sheds_total") == 3


# ---- cancellation ----


CANCELLED = {"code": "TOOL_CANCELLED", "message": "tool call was cancelled"}


@pytest.mark.parametrize(
    ("tool", "arguments", "reason", "error"),
    [
        (
            "session_event_search",
            {"query": "lighthouse"},
            {"code": "X_CANCEL", "message": "stop now"},
            {"code": "X_CANCEL", "message": "stop now"},
        ),
        ("session_event_read", {"seq": 0}, "user pressed escape", CANCELLED),
        ("session_event_read", {"seq": 0}, 42, CANCELLED),
        ("session_event_read", {"seq": 0}, ["X_CANCEL", "stop now"], CANCELLED),
        ("session_event_read", {"seq": 0}, {"code": 7, "message": "stop now"}, CANCELLED),
    ],
    ids=["code-and-message", "string", "number", "array", "object-without-string-code"],
)
async def test_a_cancel_replies_with_its_code_and_message_else_tool_cancelled_echoing_it(
    stack: Stack, tool: str, arguments: Any, reason: Any, error: dict[str, str]
) -> None:
    rid = str(uuid.uuid4())
    # The caller's events have not arrived, so the worker waits for min_seq: in flight.
    task = await waiting_call(stack, tool, arguments, rid)
    await stack.client.cancel(rid, reason, routing_key=WS.encode())
    reply = await asyncio.wait_for(task, 15)
    assert reply.to_json() == {"v": 1, "id": rid, "ok": False, "error": error, "reason": reason}


async def test_cancelling_the_awaiting_task_sends_a_cancel_record_and_aborts_the_call(
    stack: Stack,
) -> None:
    rid = str(uuid.uuid4())
    task = await waiting_call(stack, "session_search", {"query": "lighthouse"}, rid)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    (reply,) = (await stack.tap.wait_for([rid], timeout=15)).values()
    reason = {"code": "SESSION_QUERY_ABORTED", "message": "session query was cancelled"}
    assert reply.to_json() == {
        "v": 1,
        "id": rid,
        "ok": False,
        "error": reason,
        "reason": reason,
    }
    # The cancel record went to the request's partition (same key) after the request.
    records = [
        r
        for r in await read_topic(stack.topics.bootstrap, stack.topics.requests)
        if rid.encode() in (r.value or b"")
    ]
    assert [r.key for r in records] == [WS.encode(), WS.encode()]
    assert records[0].partition == records[1].partition
    assert records[0].offset < records[1].offset


# ---- read-your-writes ----


async def test_min_seq_call_answers_once_the_callers_events_are_applied(stack: Stack) -> None:
    late = header("late-caller", cwd=WS)
    task = await start_call(
        stack,
        "session_event_search",
        {"query": "zebra"},
        session_id="late-caller",
        min_seq=2,
        timeout_ms=20000,
        routing_key=WS,
    )
    # Through seq 1 is not enough: the worker keeps waiting.
    await stack.publish_session(
        late, [plain(0, "turn/start", {"turn": 1}), user(1, "a zebra crossing")]
    )
    await stack.indexed()
    done, _ = await asyncio.wait({task}, timeout=0.5)
    assert not done, task.result()

    await stack.producer.send_json(
        stack.topics.events,
        {
            "v": 1,
            "kind": "events",
            "session_id": "late-caller",
            "events": [plain(2, "step/start", {"turn": 1, "step": 1})],
        },
        key=WS,
    )
    reply = await asyncio.wait_for(task, 15)
    assert reply.ok, reply
    assert reply.text is not None
    assert "seq 1 | user/message" in reply.text and "zebra" in reply.text


async def test_min_seq_call_times_out_when_the_events_never_arrive(stack: Stack) -> None:
    rid = str(uuid.uuid4())
    started = time.monotonic()
    reply = await stack.client.call(
        "session_event_read",
        {"seq": 0},
        session_id="peer",
        min_seq=10,  # the peer's log ends at seq 2
        timeout_ms=1000,
        routing_key=WS,
        request_id=rid,
    )
    await timed_out_by_the_worker(stack, rid, reply, time.monotonic() - started)


# ---- a caller the index has not seen yet ----


async def test_request_from_a_caller_not_indexed_yet_waits_for_its_header(stack: Stack) -> None:
    """DESIGN.md: "a request whose caller session is unknown waits for it" (no min_seq)."""
    task = await start_call(
        stack, "session_trace", {}, session_id="newcomer", timeout_ms=20000, routing_key=WS
    )
    await stack.publish_session(header("newcomer", cwd=WS), [user(0, "hello")])
    reply = await asyncio.wait_for(task, 15)
    assert reply.ok, reply
    assert reply.text is not None and reply.text.startswith("Session newcomer")


async def test_request_from_a_caller_that_never_arrives_times_out(stack: Stack) -> None:
    rid = str(uuid.uuid4())
    started = time.monotonic()
    reply = await stack.client.call(
        "session_trace",
        {},
        session_id="never-published",
        timeout_ms=1000,
        routing_key=WS,
        request_id=rid,
    )
    await timed_out_by_the_worker(stack, rid, reply, time.monotonic() - started)


async def test_cancel_reaches_a_waiting_call_while_every_slot_is_busy(
    kafka_case: KafkaCase,
) -> None:
    """Cancel records are control messages: a worker whose ``max_in_flight`` slots are all
    taken by calls waiting for ``min_seq`` must still read the cancel and abort the call.
    Today every record, cancels included, first takes a slot, so the cancel waits behind
    the calls it is meant to abort (until their deadline)."""
    kafka_bootstrap, topic_factory, unique_name, tmp_path = kafka_case.parts()
    topics = await create_topics(kafka_bootstrap, topic_factory, events=1, requests=1)
    async with running_stack(topics, tmp_path / "data", unique_name("group"), max_in_flight=2) as s:
        rid = str(uuid.uuid4())
        first = await start_call(
            s,
            "session_trace",
            {},
            session_id="late-caller",
            min_seq=5,
            timeout_ms=12000,
            routing_key=WS,
            request_id=rid,
        )
        second = await start_call(
            s,
            "session_trace",
            {},
            session_id="late-caller",
            min_seq=5,
            timeout_ms=12000,
            routing_key=WS,
        )
        reason = {"code": "X_CANCEL", "message": "stop now"}
        await s.client.cancel(rid, reason, routing_key=WS.encode())
        reply = await asyncio.wait_for(first, 8)
        assert reply.error is not None and reply.error.code == "X_CANCEL", reply
        second.cancel()
