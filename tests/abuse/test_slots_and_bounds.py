"""Issue 10, items 3 and 7: no request pins the execution slots, no argument exhausts CPU
or memory. Waiting for a caller or ``min_seq`` holds no slot; one workspace holds at
most its share of the slots; a far-future record timestamp does not stretch a deadline;
deeply nested arguments and huge queries are refused before any work."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable
from typing import Any

import pytest

from tests.builders import first_step, header, user
from tests.fixtures.kafka import KafkaCase
from tests.fixtures.tools import HarnessFactory
from tests.fixtures.waiting import wait_until
from tests.kafka.harness import stack_with_session
from tests.kafka.records import request_record
from worker.calls.limits import ToolLimits
from worker.calls.pipeline import Pipeline
from worker.calls.slots import Slots
from worker.calls.tool_call import ToolCall, deadline_for
from worker.contract.arguments import MAX_ARGUMENT_CHARS, MAX_ARGUMENT_DEPTH, MAX_QUERY_CHARS
from worker.tools.access import Caller
from worker.tools.registry import TOOLS

OTHER = (header("other", cwd="/work"), [user(0, "needle text")])


# ---- bounds (item 7) -------------------------------------------------------------------------
async def test_deep_arguments_and_huge_queries_are_refused_before_any_work(
    make_harness: HarnessFactory,
) -> None:
    h = make_harness([OTHER])
    deep: Any = "x"
    for _ in range(MAX_ARGUMENT_DEPTH + 5):
        deep = [deep]
    h.spy.calls.clear()
    reply = await h.call("session_search", {"query": "needle", "extra": deep})
    assert reply.error is not None and reply.error.code == "INVALID_ARGS"
    assert f"nest deeper than {MAX_ARGUMENT_DEPTH} levels" in reply.error.message
    very_deep: Any = {}
    for _ in range(5000):  # would overflow a recursive walk
        very_deep = {"k": very_deep}
    reply = await h.call("session_trace", very_deep)
    assert reply.error is not None and reply.error.code == "INVALID_ARGS"
    reply = await h.call("session_search", {"query": "needle " * 2000})
    assert reply.error is not None and reply.error.code == "INVALID_ARGS"
    assert f'"query" must be at most {MAX_QUERY_CHARS} characters' in reply.error.message
    wide = {"query": "needle", "session_ids": ["s" * 1000] * (MAX_ARGUMENT_CHARS // 1000 + 1)}
    reply = await h.call("session_search", wide)
    assert reply.error is not None and reply.error.code == "INVALID_ARGS"
    assert f"arguments must total at most {MAX_ARGUMENT_CHARS} characters" in reply.error.message
    assert h.spy.calls == []  # refused before the service was asked anything
    ok = await h.call("session_search", {"query": "needle " * 10})
    assert ok.error is None, ok.text


# ---- deadlines (item 3) ----------------------------------------------------------------------
def test_a_far_future_timestamp_does_not_stretch_the_deadline() -> None:
    limits = ToolLimits(maxTimeoutMs=60000)
    future = time.time() * 1000 + 120_000
    deadline = deadline_for(limits, TOOLS["session_trace"], None, future)
    assert 59.0 < deadline.remaining() <= 60.0  # counted from now, not from 2 min ahead
    near = time.time() * 1000 + 1000  # within the allowed clock skew: taken as sent
    assert deadline_for(limits, TOOLS["session_trace"], None, near).remaining() > 60.0


# ---- slots (item 3) --------------------------------------------------------------------------
class Blocking:
    """Wraps a real service: ``search_sessions`` blocks until released."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.release = threading.Event()
        self.running = 0
        self.peak = 0
        self._lock = threading.Lock()

    def search_sessions(self, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            self.running += 1
            self.peak = max(self.peak, self.running)
        try:
            assert self.release.wait(10)
            return self.real.search_sessions(*args, **kwargs)
        finally:
            with self._lock:
                self.running -= 1

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


async def test_waiting_calls_hold_no_slot_and_a_workspace_holds_its_share(
    store_factory: Any,
) -> None:
    sessions = [
        (header("caller-x1", cwd="/x"), [user(0, "needle")]),
        (header("caller-x2", cwd="/x"), [user(0, "needle")]),
        (header("caller-y", cwd="/y"), [user(0, "needle")]),
    ]
    service = Blocking(store_factory(sessions))
    pipeline = Pipeline(service, wait_for_caller=True, slots=Slots(total=2, per_workspace=1))  # type: ignore[arg-type]

    def call(rid: str, caller: str, key: str) -> Awaitable[Any]:
        return pipeline.answer(
            ToolCall(
                rid,
                "session_search",
                {"query": "needle"},
                Caller(caller),
                timeout_ms=30_000,
                workspace_key=key,
            )
        )

    # 20 calls whose caller never appears: they wait, holding no slot
    ghosts = [asyncio.create_task(call(f"g{i}", "ghost", "/ghost")) for i in range(20)]
    x1 = asyncio.create_task(call("x1", "caller-x1", "/x"))
    await wait_until(lambda: service.running == 1, timeout=5.0, what="the /x search to run")
    x2 = asyncio.create_task(call("x2", "caller-x2", "/x"))  # /x's one slot is taken
    y = asyncio.create_task(call("y", "caller-y", "/y"))
    await wait_until(
        lambda: service.running == 2, timeout=5.0, what="the /y search to run beside /x's"
    )
    await asyncio.sleep(0.1)
    assert service.running == 2 and not x2.done()  # /x holds at most its share
    service.release.set()
    replies = await asyncio.wait_for(asyncio.gather(x1, x2, y), 10)
    assert all(r.error is None for r in replies), replies
    assert service.peak == 2
    for task in ghosts:
        task.cancel()


async def test_requests_for_an_unknown_future_caller_do_not_starve_others_over_kafka(
    kafka_case: KafkaCase,
) -> None:
    """The reproduction of issue 10 item 3: 64 requests (the default max_in_flight) for
    an unknown caller stamped 120 s in the future, then three normal requests."""
    kafka_bootstrap, topic_factory, unique_name, tmp_path = kafka_case.parts()
    head = header("sess-ok", cwd="/abuse/slots")
    events = first_step("slot needle")
    async with stack_with_session(
        kafka_bootstrap, topic_factory, unique_name("group"), tmp_path / "data", head, events
    ) as s:
        future_ms = int(time.time() * 1000) + 120_000
        for i in range(64):
            record = request_record(
                f"hog-{i}",
                s.topics.replies,
                "session_trace",
                {},
                session_id="nobody",
                timeout_ms=60_000,
            )
            await s.producer.send_json(
                s.topics.requests, record, key="/abuse/hog", timestamp_ms=future_ms
            )
        good = []
        for i in range(3):
            rid = f"good-{i}"
            record = request_record(
                rid,
                s.topics.replies,
                "session_search",
                {"query": "slot needle"},
                session_id="sess-ok",
                timeout_ms=20_000,
            )
            await s.producer.send_json(s.topics.requests, record, key="/abuse/slots")
            good.append(rid)
        # The parked ones hold until their 60 s deadline: answered well before it, the
        # normal requests did not wait behind them (however busy the machine is).
        replies = await s.tap.wait_for(good, timeout=45)
        assert all(r.ok for r in replies.values()), replies


def test_a_hosts_share_bounds_only_that_host_and_is_given_back() -> None:
    from worker.calls.slots import Shares
    from worker.contract.errors import BUSY, HarnessError

    shares = Shares(per_host=3, per_workspace=2)
    held = [shares.take("bad", "/w/1"), shares.take("bad", "/w/1"), shares.take("bad", "/w/2")]
    for host, ws in (("bad", "/w/3"), ("good", "/w/1")):  # host full; workspace full
        with pytest.raises(HarnessError) as err:
            shares.take(host, ws)
        assert err.value.code == BUSY
    good = shares.take("good", "/w/9")  # another host and workspace: unaffected
    unauthenticated = shares.take(None, "/w/2")  # no host bound without authentication
    for share in (*held, good, unauthenticated):
        share.release()
    assert shares.held("host", "bad") == 0 and shares.held("workspace", "/w/1") == 0
    shares.take("bad", "/w/1")
