"""``Pipeline`` step by step (deadline, read-your-writes wait, cancel, gate, metrics),
``ToolCall.from_request`` and the tool registry — without a broker.

Where a step must not reach the service, the service is ``Untouchable``; where the tools
must run, the real store of ``make_harness`` is used with scripted methods.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from indexer.metrics import Metrics
from tests.builders import header
from tests.fixtures.tools import Gate, Harness, HarnessFactory, beside_another_call, until
from tests.tool_names import unknown_tool_message
from worker.calls.cancels import EARLY_CANCELS
from worker.calls.limits import ToolLimits
from worker.calls.pipeline import Pipeline
from worker.calls.tool_call import ToolCall, deadline_for
from worker.contract.envelopes import CallerRef, ToolRequest
from worker.contract.errors import HarnessError
from worker.contract.outcome import ToolReply
from worker.tools.access import Caller
from worker.tools.registry import TOOLS, lookup

SCHEMAS = Path(__file__).resolve().parents[2] / "worker" / "contract" / "schemas.json"
WAIT_S = 10.0
SEARCHES = ("session_search", "session_event_search")
READS = ("session_trace", "session_event_trace", "session_event_read")


class Untouchable:
    """A query service that must not be called: any method use is recorded and fails."""

    def __init__(self) -> None:
        self.touched: list[str] = []

    def __getattr__(self, name: str) -> Any:
        self.touched.append(name)
        raise AssertionError(f"the service was used: {name}")


def error_of(reply: ToolReply) -> tuple[str, str]:
    assert reply.error is not None, reply.text
    return reply.error.code, reply.error.message


def sample(metrics: Metrics, name: str, **labels: str) -> float:
    value = metrics.registry.get_sample_value(name, labels)
    return 0.0 if value is None else value


def requests(metrics: Metrics, tool: str, outcome: str) -> float:
    return sample(metrics, "sessionq_requests_total", tool=tool, outcome=outcome)


async def settle(turns: int = 50) -> None:
    for _ in range(turns):
        await asyncio.sleep(0)


class ScriptedSeq:
    """A scripted ``last_seq``: returns ``value`` (None: the session is unknown) and
    records every answer. Called on the event loop thread, so plain state suffices."""

    def __init__(self, value: int | None, real: Callable[[str], int | None] | None = None):
        self.value = value
        self.real = real
        self.answers: list[int | None] = []

    def __call__(self, session_id: str) -> int | None:
        answer = self.real(session_id) if self.real is not None else self.value
        self.answers.append(answer)
        return answer


# ---- step 2: deadline -----------------------------------------------------------------------
async def test_a_call_past_its_deadline_is_shed_without_service_calls() -> None:
    service = Untouchable()
    metrics = Metrics("worker")
    pipeline = Pipeline(service, metrics=metrics)
    ten_seconds_ago = time.time() * 1000 - 10_000
    call = ToolCall(
        "r1", "session_trace", {}, Caller("caller"), min_seq=3, timeout_ms=1000,
        sent_ms=ten_seconds_ago,
    )
    reply = await pipeline.answer(call)
    assert error_of(reply) == ("TOOL_TIMEOUT", "tool call timed out after 1000ms")
    assert reply.cancel_reason is None
    assert service.touched == []
    assert sample(metrics, "sessionq_deadline_sheds_total") == 1
    assert requests(metrics, "session_trace", "TOOL_TIMEOUT") == 1
    assert sample(metrics, "sessionq_in_flight_calls") == 0  # never counted as in flight


async def test_a_search_is_shed_by_its_own_budget_not_the_request_timeout() -> None:
    """The search budget (2 s here) caps a 60 s request timeout: sent 3 s ago is too late."""
    service = Untouchable()
    metrics = Metrics("worker")
    limits = ToolLimits(searchTimeoutMs=2000)
    pipeline = Pipeline(service, limits, metrics=metrics)
    call = ToolCall(
        "r1", "session_event_search", {"query": "q"}, Caller("caller"), timeout_ms=60_000,
        sent_ms=time.time() * 1000 - 3000,
    )
    reply = await pipeline.answer(call)
    assert error_of(reply) == ("TOOL_TIMEOUT", "tool call timed out after 2000ms")
    assert service.touched == []
    assert sample(metrics, "sessionq_deadline_sheds_total") == 1


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_deadline_budget_follows_the_tools_registered_budget(name: str) -> None:
    limits = ToolLimits(searchTimeoutMs=1500, maxTimeoutMs=4000)
    expected = 1500 if name in SEARCHES else 4000
    assert deadline_for(limits, TOOLS[name], None, None).budget_ms == expected
    assert deadline_for(limits, TOOLS[name], 10**6, None).budget_ms == expected
    assert deadline_for(limits, TOOLS[name], 700, None).budget_ms == 700


# ---- decode: ToolCall.from_request ----------------------------------------------------------
def _request(**fields: Any) -> ToolRequest:
    return ToolRequest.model_validate({
        "v": 1, "kind": "request", "id": "req-1", "reply_to": "replies", "tool": "session_trace",
        **fields,
    })


def test_from_request_maps_caller_min_seq_and_timeout() -> None:
    request = _request(
        arguments={"seq": 4},
        caller={"session_id": "s-1", "step_seq": 3, "min_seq": 7},
        timeout_ms=500,
    )
    call = ToolCall.from_request(request, sent_ms=1234.5)
    assert call == ToolCall(
        "req-1", "session_trace", {"seq": 4}, Caller("s-1", 3),
        min_seq=7, timeout_ms=500, sent_ms=1234.5,
    )


def test_from_request_without_caller_or_optional_fields() -> None:
    call = ToolCall.from_request(_request(), sent_ms=None)
    assert call == ToolCall("req-1", "session_trace", None, None)
    call = ToolCall.from_request(_request(caller={"session_id": "s-1"}), sent_ms=None)
    assert call.caller == Caller("s-1", None)
    assert call.min_seq is None and call.timeout_ms is None


async def test_from_request_without_a_session_id_has_no_caller() -> None:
    """A caller reference without ``session_id`` is no caller: MISSING_AGENT, no wait."""
    request = _request(arguments={}, caller=CallerRef(min_seq=4, step_seq=1).model_dump())
    call = ToolCall.from_request(request, sent_ms=None)
    assert call.caller is None and call.min_seq == 4
    service = Untouchable()
    reply = await Pipeline(service, wait_for_caller=True).answer(call)
    assert error_of(reply)[0] == "SESSION_QUERY_TOOL_MISSING_AGENT"
    assert service.touched == []


# ---- step 3: read-your-writes ---------------------------------------------------------------
async def test_min_seq_wait_returns_as_soon_as_the_log_reaches_it(
    make_harness: HarnessFactory,
) -> None:
    seq = ScriptedSeq(3)
    h = make_harness(last_seq=seq)
    task = asyncio.create_task(
        h.tools.answer(ToolCall("r1", "session_trace", {}, Caller("caller"), min_seq=5))
    )
    await until(lambda: len(seq.answers) >= 2, "the pipeline never polled last_seq twice")
    assert not task.done(), "the call must wait for min_seq"
    assert h.spy.calls_to("get_session") == []  # nothing past the wait ran yet
    seq.value = 5
    reply = await asyncio.wait_for(task, WAIT_S)
    assert reply.ok, reply.text
    assert reply.text.startswith("Session caller")
    # It went on at the first poll that saw seq 5 and polled no more.
    assert seq.answers[-1] == 5 and seq.answers.count(5) == 1
    assert set(seq.answers[:-1]) == {3}
    assert [a for a, _ in h.spy.calls_to("last_seq")] == [("caller",)] * len(seq.answers)


async def test_min_seq_already_applied_does_not_wait(make_harness: HarnessFactory) -> None:
    h = make_harness()  # the real caller log ends at seq 2
    reply = await h.tools.answer(ToolCall("r1", "session_trace", {}, Caller("caller"), min_seq=2))
    assert reply.ok, reply.text
    assert len(h.spy.calls_to("last_seq")) == 1


async def test_min_seq_never_reached_times_out(make_harness: HarnessFactory) -> None:
    metrics = Metrics("worker")
    h = make_harness()
    pipeline = Pipeline(h.spy, metrics=metrics)
    call = ToolCall("r1", "session_trace", {}, Caller("caller"), min_seq=10**9, timeout_ms=60)
    reply = await asyncio.wait_for(pipeline.answer(call), WAIT_S)
    assert error_of(reply) == ("TOOL_TIMEOUT", "tool call timed out after 60ms")
    assert reply.cancel_reason is None
    assert len(h.spy.calls_to("last_seq")) >= 1
    assert {name for name, _, _ in h.spy.calls} == {"last_seq"}  # the tool never ran
    # Timing out while waiting is not a shed: the call was alive when it was dequeued.
    assert sample(metrics, "sessionq_deadline_sheds_total") == 0
    assert requests(metrics, "session_trace", "TOOL_TIMEOUT") == 1


async def test_no_min_seq_and_no_caller_wait_means_no_last_seq_lookup(
    make_harness: HarnessFactory,
) -> None:
    h = make_harness()
    reply = await h.call("session_trace", {}, caller=Caller("ghost"))
    assert error_of(reply)[0] == "SESSION_QUERY_SESSION_NOT_FOUND"
    assert h.spy.calls_to("last_seq") == []


async def test_wait_for_caller_waits_for_an_unknown_caller_then_proceeds(
    make_harness: HarnessFactory,
) -> None:
    seq = ScriptedSeq(None)
    h = make_harness(last_seq=seq)
    pipeline = Pipeline(h.spy, wait_for_caller=True)
    call = ToolCall("r1", "session_trace", {}, Caller("caller"))
    task = asyncio.create_task(pipeline.answer(call))
    await until(lambda: len(seq.answers) >= 2, "the pipeline never polled for the caller")
    assert not task.done(), "an unknown caller must be waited for"
    assert h.spy.calls_to("get_session") == []
    seq.real = h.real("last_seq")  # the caller's events arrive (its log ends at seq 2)
    reply = await asyncio.wait_for(task, WAIT_S)
    assert reply.ok, reply.text
    assert reply.text.startswith("Session caller")
    assert seq.answers[-1] == 2 and set(seq.answers[:-1]) == {None}


async def test_wait_for_caller_times_out_when_the_caller_never_appears(
    make_harness: HarnessFactory,
) -> None:
    h = make_harness()
    pipeline = Pipeline(h.spy, wait_for_caller=True)
    call = ToolCall("r1", "session_trace", {}, Caller("ghost"), timeout_ms=50)
    reply = await asyncio.wait_for(pipeline.answer(call), WAIT_S)
    assert error_of(reply) == ("TOOL_TIMEOUT", "tool call timed out after 50ms")
    assert h.spy.calls_to("get_session") == []


# ---- cancel ---------------------------------------------------------------------------------
async def test_cancel_of_a_waiting_call_replies_with_the_raw_reason(
    make_harness: HarnessFactory,
) -> None:
    metrics = Metrics("worker")
    seq = ScriptedSeq(0)
    h = make_harness(last_seq=seq)
    pipeline = Pipeline(h.spy, metrics=metrics)
    task = asyncio.create_task(
        pipeline.answer(ToolCall("r1", "session_trace", {}, Caller("caller"), min_seq=5))
    )
    await until(lambda: len(seq.answers) >= 1, "the call never started waiting")
    assert sample(metrics, "sessionq_in_flight_calls") == 1
    reason = {"code": "SESSION_QUERY_ABORTED", "message": "host closed", "extra": [1]}
    pipeline.cancel("r1", reason)
    reply = await asyncio.wait_for(task, WAIT_S)
    assert error_of(reply) == ("SESSION_QUERY_ABORTED", "host closed")
    assert reply.cancel_reason is reason
    assert sample(metrics, "sessionq_in_flight_calls") == 0
    assert requests(metrics, "session_trace", "SESSION_QUERY_ABORTED") == 1
    # The cancel reached the in-flight call; it is not remembered for a later one.
    seq.value = 5
    again = await pipeline.answer(ToolCall("r1", "session_trace", {}, Caller("caller"), min_seq=5))
    assert again.ok, again.text


async def test_cancel_while_the_service_runs_waits_for_it_and_wins(
    make_harness: HarnessFactory,
) -> None:
    gate = Gate()
    h = make_harness()
    real = h.real("trace_session")
    h.spy.scripted["trace_session"] = gate.hold(lambda: real("caller"))
    call = ToolCall("r1", "session_trace", {}, Caller("caller"))
    async with beside_another_call(h):  # so the trace runs in a worker thread
        task = asyncio.create_task(h.tools.answer(call))
        await gate.wait_started()
        h.tools.cancel("r1", "stop")
        await asyncio.wait({task}, timeout=0.05)
        assert not task.done(), "the call must wait for the service to settle"
        gate.release.set()
        reply = await asyncio.wait_for(task, WAIT_S)
    assert error_of(reply) == ("TOOL_CANCELLED", "tool call was cancelled")
    assert reply.cancel_reason == "stop"


async def test_a_cancel_before_its_request_is_remembered_once() -> None:
    service = Untouchable()
    metrics = Metrics("worker")
    pipeline = Pipeline(service, metrics=metrics)
    reason = {"code": "SESSION_QUERY_ABORTED", "message": "overtaken"}
    pipeline.cancel("r1", reason)
    reply = await pipeline.answer(ToolCall("r1", "session_search", {"query": "q"}, Caller("c")))
    assert error_of(reply) == ("SESSION_QUERY_ABORTED", "overtaken")
    assert reply.cancel_reason is reason
    assert service.touched == []
    assert sample(metrics, "sessionq_deadline_sheds_total") == 0  # a cancel is not a shed
    assert requests(metrics, "session_search", "SESSION_QUERY_ABORTED") == 1
    # Consumed by its request: another request with that id is not cancelled by it.
    reply = await pipeline.answer(ToolCall("r1", "session_search", {}, None))
    assert error_of(reply)[0] == "INVALID_ARGS"


async def test_remembered_cancels_are_bounded_oldest_first(make_harness: HarnessFactory) -> None:
    h = make_harness()
    pipeline = h.tools
    pipeline.cancel("oldest", "stale")
    pipeline.cancel("second", "kept")
    for i in range(EARLY_CANCELS - 1):
        pipeline.cancel(f"filler-{i}", None)
    # EARLY_CANCELS + 1 were remembered: only the oldest has been forgotten.
    forgotten = await pipeline.answer(ToolCall("oldest", "session_trace", {}, Caller("caller")))
    assert forgotten.ok, forgotten.text
    kept = await pipeline.answer(ToolCall("second", "session_trace", {}, Caller("caller")))
    assert error_of(kept) == ("TOOL_CANCELLED", "tool call was cancelled")
    assert kept.cancel_reason == "kept"
    newest = await pipeline.answer(
        ToolCall(f"filler-{EARLY_CANCELS - 2}", "session_trace", {}, Caller("caller"))
    )
    assert error_of(newest)[0] == "TOOL_CANCELLED"


# ---- unknown tools and metrics --------------------------------------------------------------
@pytest.mark.parametrize("tool", ["session_delete", "Session_Trace", "", 7, None])
async def test_unknown_tool_is_invalid_args_counted_as_unknown(tool: Any) -> None:
    service = Untouchable()
    metrics = Metrics("worker")
    pipeline = Pipeline(service, metrics=metrics)
    reply = await pipeline.answer(ToolCall("r1", tool, {}, Caller("c")))
    shown = json.dumps(tool) if isinstance(tool, str) else "(not a string)"
    assert error_of(reply) == ("INVALID_ARGS", unknown_tool_message(shown))
    assert service.touched == []
    assert requests(metrics, "unknown", "INVALID_ARGS") == 1
    assert sample(metrics, "sessionq_request_seconds_count", tool="unknown") == 1


async def test_requests_are_counted_by_tool_and_outcome(make_harness: HarnessFactory) -> None:
    metrics = Metrics("worker")
    h = make_harness()
    pipeline = Pipeline(h.spy, metrics=metrics)
    caller = Caller("caller")
    assert (await pipeline.call("session_trace", {}, caller)).ok
    assert (await pipeline.call("session_trace", {}, caller)).ok
    assert (await pipeline.call("session_event_read", {"seq": 1}, caller)).ok
    assert not (await pipeline.call("session_search", {}, caller)).ok
    assert not (await pipeline.call("session_trace", {}, Caller("ghost"))).ok
    assert not (await pipeline.call("bogus", {}, caller)).ok
    assert requests(metrics, "session_trace", "ok") == 2
    assert requests(metrics, "session_event_read", "ok") == 1
    assert requests(metrics, "session_search", "INVALID_ARGS") == 1
    assert requests(metrics, "session_trace", "SESSION_QUERY_SESSION_NOT_FOUND") == 1
    assert requests(metrics, "unknown", "INVALID_ARGS") == 1
    assert sample(metrics, "sessionq_request_seconds_count", tool="session_trace") == 3
    assert sample(metrics, "sessionq_in_flight_calls") == 0
    assert sample(metrics, "sessionq_deadline_sheds_total") == 0


# ---- step 4: the gate -----------------------------------------------------------------------
class SlowSearch:
    """A scripted ``search_sessions`` that blocks the first search of ``caller`` until
    released, and records the start and end of every search (from worker threads)."""

    def __init__(self, real: Callable[..., Any], caller: str) -> None:
        self.real = real
        self.caller = caller
        self.gate = Gate()
        self.events: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        self._count = 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        who = next(iter(kwargs["exclude_session_ids"]))
        with self._lock:
            self._count += 1
            label = f"{who}#{self._count}"
            self.events.append(("start", label))
        if who == self.caller and self._count == 1:
            self.gate.started.set()
            assert self.gate.release.wait(WAIT_S)
        result = self.real(*args, **kwargs)
        with self._lock:
            self.events.append(("end", label))
        return result


async def _blocked(task: asyncio.Task[ToolReply], h: Harness, users: int) -> None:
    await until(
        lambda: (g := h.tools.admission.gates._gates.get("caller")) is not None
        and g.users >= users,
        f"{users} calls never reached the caller's gate",
    )
    await settle()
    assert not task.done()


async def test_exclusive_tools_of_one_caller_are_serialized(make_harness: HarnessFactory) -> None:
    h = make_harness([(header("other"), []), (header("peer"), [])], live=("caller", "other"))
    slow = SlowSearch(h.real("search_sessions"), "caller")
    h.spy.scripted["search_sessions"] = slow
    async with beside_another_call(h):  # so the held search runs in a worker thread
        await _serialized(h, slow)


async def _serialized(h: Harness, slow: SlowSearch) -> None:
    first = asyncio.create_task(h.call("session_search", {"query": "needle"}))
    await slow.gate.wait_started()

    second = asyncio.create_task(h.call("session_search", {"query": "needle"}))
    await _blocked(second, h, users=2)
    read = asyncio.create_task(h.call("session_trace", {}))
    await _blocked(read, h, users=3)
    assert len(h.spy.calls_to("search_sessions")) == 1, "the second search ran beside the first"
    assert h.spy.calls_to("trace_session") == [], "a read ran beside an exclusive search"

    # Another caller's search is not held up by this caller's.
    other = await asyncio.wait_for(
        h.call("session_search", {"query": "needle"}, caller=Caller("other")), WAIT_S
    )
    assert other.ok, other.text
    assert not first.done()

    slow.gate.release.set()
    replies = await asyncio.wait_for(asyncio.gather(first, second, read), WAIT_S)
    assert all(r.ok for r in replies), [r.text for r in replies]
    mine = [e for e in slow.events if e[1].startswith("caller#")]
    assert mine == [("start", "caller#1"), ("end", "caller#1"), ("start", "caller#3"),
                    ("end", "caller#3")]
    assert h.tools.admission.gates._gates == {}


async def test_parallel_reads_of_one_caller_run_together(make_harness: HarnessFactory) -> None:
    gate = Gate()
    h = make_harness()
    real = h.real("trace_session")
    h.spy.scripted["trace_session"] = gate.hold(lambda: real("caller"))
    async with beside_another_call(h):  # so the held trace runs in a worker thread
        first = asyncio.create_task(h.call("session_trace", {}))
        await gate.wait_started()
        # A second read of the same caller runs its service calls while the first is held.
        read = await asyncio.wait_for(h.call("session_event_read", {"seq": 1}), WAIT_S)
        assert read.ok, read.text
        assert not first.done()
        gate.release.set()
        assert (await asyncio.wait_for(first, WAIT_S)).ok
    assert h.tools.admission.gates._gates == {}


# ---- worker/tools/registry.py ---------------------------------------------------------------
def test_registry_order_is_the_schema_files_tool_order() -> None:
    declared = [tool["name"] for tool in json.loads(SCHEMAS.read_text("utf-8"))["tools"]]
    assert list(TOOLS) == declared
    assert list(TOOLS) == [*SEARCHES, *READS]
    assert all(TOOLS[name].name == name for name in TOOLS)


@pytest.mark.parametrize("name", SEARCHES)
def test_searches_are_exclusive_with_the_search_budget(name: str) -> None:
    tool = TOOLS[name]
    assert (tool.mode, tool.budget, tool.exclusive) == ("exclusive", "search", True)


@pytest.mark.parametrize("name", READS)
def test_reads_are_parallel_with_the_read_budget(name: str) -> None:
    tool = TOOLS[name]
    assert (tool.mode, tool.budget, tool.exclusive) == ("parallel", "read", False)


def test_lookup_finds_registered_tools() -> None:
    for name, tool in TOOLS.items():
        assert lookup(name) is tool


@pytest.mark.parametrize("name", [None, 1, 1.5, True, ["session_trace"], {"session_trace": 1},
                                  b"session_trace", "session_trace ", "SESSION_TRACE"])
def test_lookup_rejects_anything_but_a_registered_name(name: object) -> None:
    found = lookup(name)
    assert isinstance(found, HarnessError)
    assert found.code == "INVALID_ARGS"
    shown = json.dumps(name) if isinstance(name, str) else "(not a string)"
    assert found.message == unknown_tool_message(shown)
