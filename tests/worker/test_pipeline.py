"""The pipeline: one reply per call, in a fixed order, never an exception."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.builders import header, user
from tests.fixtures.tools import Harness, HarnessFactory, beside_another_call
from tests.tool_names import unknown_tool_message
from worker.calls.limits import ToolLimits
from worker.calls.pipeline import LOOP_RUN_MAX_S
from worker.calls.tool_call import deadline_for
from worker.contract.deadline import CancelToken, Deadline
from worker.contract.outcome import ToolReply
from worker.tools.access import Caller
from worker.tools.registry import TOOLS


def error_of(reply: ToolReply) -> tuple[str, str]:
    assert reply.error is not None, reply.text
    return reply.error.code, reply.error.message


async def test_expired_deadline_does_no_work(make_harness: HarnessFactory) -> None:
    h = make_harness()
    reply = await h.call("session_search", {"query": "q"}, timeout_ms=0)
    assert error_of(reply) == ("TOOL_TIMEOUT", "tool call timed out after 0ms")
    past = Deadline.after(1234, start=time.monotonic() - 5)
    reply = await h.call("session_trace", {}, deadline=past)
    assert reply.text == "Error: tool call timed out after 1234ms"
    assert h.spy.calls == []


def test_one_deadline_computation_caps_the_request_timeout() -> None:
    limits = ToolLimits(searchTimeoutMs=30000, maxTimeoutMs=60000)
    search, trace = TOOLS["session_search"], TOOLS["session_trace"]
    assert deadline_for(limits, search, 10**9, None).budget_ms == 30000
    assert deadline_for(limits, search, None, None).budget_ms == 30000
    assert deadline_for(limits, trace, 500, None).budget_ms == 500
    assert deadline_for(limits, trace, None, None).budget_ms == 60000
    assert deadline_for(limits, None, True, None).budget_ms == 60000  # not an int: ignored
    sent_5s_ago = time.time() * 1000 - 5000
    assert 0.9 < deadline_for(limits, trace, 6000, sent_5s_ago).remaining() <= 1.0


async def test_pre_cancelled_call_replies_with_the_raw_reason(make_harness: HarnessFactory) -> None:
    h = make_harness()
    token = CancelToken()
    reason = {"code": "SESSION_QUERY_ABORTED", "message": "host closed", "extra": [1]}
    token.cancel(reason)
    reply = await h.call("session_trace", {}, token=token)
    assert error_of(reply) == ("SESSION_QUERY_ABORTED", "host closed")
    assert reply.cancel_reason is reason
    token = CancelToken()
    token.cancel("stop")
    reply = await h.call("session_trace", {}, token=token)
    assert error_of(reply) == ("TOOL_CANCELLED", "tool call was cancelled")
    assert reply.cancel_reason == "stop"
    assert h.spy.calls == []


async def test_order_arguments_before_caller(make_harness: HarnessFactory) -> None:
    h = make_harness()
    reply = await h.call("session_search", {}, caller=None)
    assert error_of(reply)[0] == "INVALID_ARGS"
    reply = await h.call("session_search", {"query": "   "}, caller=None)
    assert error_of(reply)[0] == "SESSION_QUERY_TOOL_MISSING_AGENT"


async def test_unknown_tool_and_unknown_caller(make_harness: HarnessFactory) -> None:
    h = make_harness()
    reply = await h.call("session_delete", {"session_id": "x"})
    assert error_of(reply) == ("INVALID_ARGS", unknown_tool_message('"session_delete"'))
    reply = await h.call("session_trace", {}, caller=Caller("nobody"))
    assert error_of(reply) == ("SESSION_QUERY_SESSION_NOT_FOUND", "session was not found")


async def test_success_reply_shape(make_harness: HarnessFactory) -> None:
    h = make_harness()
    reply = await h.call("session_trace", {})
    assert reply.ok and reply.error is None and reply.text == reply.output
    assert reply.text.startswith("Session caller — untitled\nCreated: 1970-01-01T00:00:00.010Z")


async def test_internal_bugs_become_the_generic_failure(
    make_harness: HarnessFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    from worker.tools import render

    def broken(*_args: Any) -> str:
        raise ZeroDivisionError("renderer bug about hidden-1")

    monkeypatch.setattr(render, "session_trace", broken)
    reply = await make_harness().call("session_trace", {})
    assert error_of(reply) == ("SESSION_QUERY_TOOL_FAILED", "session query operation failed")


async def test_event_time_outside_the_date_range_is_a_generic_failure(
    make_harness: HarnessFactory,
) -> None:
    """``toISOString`` throws for |t| > 8.64e15; upstream's render would fail the same way."""
    h = make_harness([(header("far"), [user(0, "far future", time=9_000_000_000_000_000)])])
    reply = await h.call("session_event_trace", {"session_id": "far", "seq": 0})
    assert error_of(reply)[0] == "SESSION_QUERY_TOOL_FAILED"


json_leaf = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8)
json_any = st.recursive(
    json_leaf,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                max_size=3),
    max_leaves=8,
)
keys = st.sampled_from([
    "query", "session_id", "session_ids", "seq", "before", "after", "seq_from", "seq_to",
    "time_from", "time_to", "created_at_from", "event_time_to", "availability", "surfaces",
    "event_surfaces", "event_types", "parent_session_ids", "include_root_sessions", "x",
])
values = json_any | st.sampled_from([
    "needle", "caller", "other", "2026-07-24T00:00:00Z", ["live"], ["current"], 0, 1, 2**53, -1,
])
arguments = st.dictionaries(keys, values, max_size=6) | json_any
tools = st.sampled_from([
    "session_search", "session_event_search", "session_trace", "session_event_trace",
    "session_event_read", "bogus",
])


@pytest.fixture
def fuzz_harness(make_harness: HarnessFactory) -> Harness:
    return make_harness([(header("other"), [user(0, "needle in other")])])


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(tool=tools, args=arguments, who=st.sampled_from([None, "caller", "other", "ghost"]))
async def test_fuzzing_never_raises(
    fuzz_harness: Harness, tool: str, args: Any, who: str | None
) -> None:
    caller = None if who is None else Caller(who)
    reply = await fuzz_harness.call(tool, args, caller=caller)
    assert isinstance(reply, ToolReply)
    if reply.ok:
        assert reply.output and not reply.text.startswith("Error: ")
    else:
        assert reply.error is not None
        assert reply.text == f"Error: {reply.error.message}"
        assert reply.error.code.isupper()


@pytest.mark.parametrize("tool", [["session_trace"], None, 3, {"x": 1}])
async def test_malformed_tool_names_are_invalid_args(
    make_harness: HarnessFactory, tool: Any
) -> None:
    reply = await make_harness().call(tool, {})
    assert error_of(reply) == ("INVALID_ARGS", unknown_tool_message("(not a string)"))


async def test_malformed_caller_is_contained(make_harness: HarnessFactory) -> None:
    reply = await make_harness().call("session_trace", {}, caller={"session_id": "caller"})
    assert error_of(reply) == ("SESSION_QUERY_TOOL_FAILED", "session query operation failed")


class _CountingExecutor(ThreadPoolExecutor):
    """The loop's default executor, counting the work handed to its threads."""

    def __init__(self) -> None:
        super().__init__(max_workers=4)
        self.handed = 0

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        self.handed += 1
        return super().submit(fn, *args, **kwargs)


@pytest.mark.parametrize("beside", [False, True], ids=["alone", "beside-another-call"])
@pytest.mark.parametrize(
    ("tool", "arguments", "on_loop"),
    [
        ("session_search", {"query": "needle"}, False),
        ("session_event_search", {"session_id": "other", "query": "needle"}, False),
        ("session_trace", {"session_id": "other"}, False),
        ("session_event_trace", {"session_id": "other", "seq": 0}, True),
        ("session_event_read", {"session_id": "other", "seq": 0, "after": 1}, True),
    ],
)
async def test_a_call_runs_where_its_tool_is_placed_with_at_most_one_thread_hand_off(
    make_harness: HarnessFactory,
    tool: str,
    arguments: dict[str, Any],
    on_loop: bool,
    beside: bool,
) -> None:
    """Searches and lineage walks (work that grows with the data) are one hand-off to a
    worker thread, every service call off the loop, while another call is in flight;
    alone, and for the bounded reads always, a call runs on the loop with none
    (``Tool.placement``, the pipeline's step 5)."""
    h = make_harness([(header("other", created_at=5), [user(0, "a needle"), user(1, "x")])])
    loop = asyncio.get_running_loop()
    executor = _CountingExecutor()
    loop.set_default_executor(executor)
    async with beside_another_call(h) if beside else contextlib.nullcontext():
        threads: set[int] = set()
        h.spy.scripted = {
            name: _recording(h.real(name), threads)
            for name in ("get_session", "filter_sessions", "read_title_snapshots")
        }
        reply = await h.call(tool, arguments)
    assert reply.error is None, reply.text
    assert len(h.spy.calls) >= 3  # caller, authorization, the payload, titles
    if on_loop or not beside:
        assert executor.handed == 0
        assert threads == {threading.get_ident()}
    else:
        assert executor.handed == 1
        assert threads and threading.get_ident() not in threads


async def test_a_tool_whose_recent_runs_were_long_is_handed_to_a_thread_even_alone(
    make_harness: HarnessFactory,
) -> None:
    """A search of a large index holds the loop for as long as it runs, so once a tool's
    recent runs took longer than ``LOOP_RUN_MAX_S`` its calls are handed to a worker
    thread even alone; when its runs are short again, they come back to the loop."""
    h = make_harness([(header("other", created_at=5), [user(0, "a needle")])])
    real = h.real("search_sessions")
    slow = {"on": True}

    def search(*args: Any, **kwargs: Any) -> Any:
        if slow["on"]:
            time.sleep(4 * LOOP_RUN_MAX_S)
        return real(*args, **kwargs)

    h.spy.scripted["search_sessions"] = search
    executor = _CountingExecutor()
    asyncio.get_running_loop().set_default_executor(executor)
    assert (await h.call("session_search", {"query": "needle"})).ok  # no history: the loop
    assert executor.handed == 0
    assert (await h.call("session_search", {"query": "needle"})).ok
    assert executor.handed == 1
    assert (await h.call("session_event_search", {"session_id": "other", "query": "needle"})).ok
    assert executor.handed == 1, "another tool's history is its own"
    slow["on"] = False
    for _ in range(200):  # the recent run time decays by a quarter of the gap per run
        handed = executor.handed
        assert (await h.call("session_search", {"query": "needle"})).ok
        if executor.handed == handed:
            break
    else:
        raise AssertionError("short searches never came back to the loop")


def _recording(method: Any, threads: set[int]) -> Any:
    def call(*args: Any, **kwargs: Any) -> Any:
        threads.add(threading.get_ident())
        return method(*args, **kwargs)

    return call
