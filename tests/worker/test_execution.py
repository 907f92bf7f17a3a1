"""``ExecutionGates``: per caller, exclusive calls run alone, parallel ones together.

Orderings are driven by asyncio events. "Is still blocked" is checked after letting the
loop run every ready task a number of times (``settle``): a gate that wrongly admits a
call admits it within those turns, and no wall-clock sleep is involved.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from worker.calls.execution import ExecutionGates

WAIT_S = 5.0


async def settle(turns: int = 50) -> None:
    """Let every ready task run, repeatedly (no wall-clock wait)."""
    for _ in range(turns):
        await asyncio.sleep(0)


async def wait_set(event: asyncio.Event, what: str) -> None:
    try:
        await asyncio.wait_for(event.wait(), WAIT_S)
    except TimeoutError:
        raise AssertionError(f"{what} within {WAIT_S:.0f} s") from None


@dataclass
class Call:
    """One call through the gates that holds its slot until ``release`` is set."""

    name: str
    entered: asyncio.Event = field(default_factory=asyncio.Event)
    release: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None


@dataclass
class Recorder:
    gates: ExecutionGates = field(default_factory=ExecutionGates)
    inside: set[str] = field(default_factory=set)
    overlaps: list[frozenset[str]] = field(default_factory=list)

    def start(self, name: str, caller: str, *, exclusive: bool) -> Call:
        call = Call(name)

        async def body() -> None:
            async with self.gates.run(caller, exclusive=exclusive):
                self.inside.add(name)
                self.overlaps.append(frozenset(self.inside))
                call.entered.set()
                try:
                    await call.release.wait()
                finally:
                    self.inside.discard(name)

        call.task = asyncio.create_task(body(), name=name)
        return call

    async def finish(self, call: Call) -> None:
        call.release.set()
        assert call.task is not None
        await asyncio.wait_for(call.task, WAIT_S)


async def test_two_exclusive_calls_of_one_caller_never_overlap() -> None:
    r = Recorder()
    first = r.start("first", "c", exclusive=True)
    await wait_set(first.entered, "the first exclusive call never entered")
    second = r.start("second", "c", exclusive=True)
    await settle()
    assert not second.entered.is_set(), "an exclusive call entered beside another"
    await r.finish(first)
    await wait_set(second.entered, "the second exclusive call never entered after the first")
    await r.finish(second)
    assert r.overlaps == [frozenset({"first"}), frozenset({"second"})]
    assert r.gates._gates == {}


async def test_parallel_calls_overlap_each_other_but_not_an_exclusive_one() -> None:
    r = Recorder()
    read1 = r.start("read1", "c", exclusive=False)
    read2 = r.start("read2", "c", exclusive=False)
    await wait_set(read1.entered, "read1 never entered")
    await wait_set(read2.entered, "read2 never entered beside read1")
    assert r.inside == {"read1", "read2"}

    search = r.start("search", "c", exclusive=True)
    await settle()
    assert not search.entered.is_set(), "an exclusive call entered beside parallel ones"
    await r.finish(read1)
    await settle()
    assert not search.entered.is_set(), "an exclusive call entered while read2 still runs"
    await r.finish(read2)
    await wait_set(search.entered, "the exclusive call never entered once the reads ended")

    read3 = r.start("read3", "c", exclusive=False)
    await settle()
    assert not read3.entered.is_set(), "a parallel call entered beside an exclusive one"
    await r.finish(search)
    await wait_set(read3.entered, "read3 never entered after the exclusive call")
    await r.finish(read3)

    for overlap in r.overlaps:
        assert "search" not in overlap or overlap == {"search"}, overlap
    assert frozenset({"read1", "read2"}) in r.overlaps
    assert r.gates._gates == {}


async def test_different_callers_never_block_each_other() -> None:
    r = Recorder()
    a_search = r.start("a-search", "a", exclusive=True)
    await wait_set(a_search.entered, "a's search never entered")
    b_search = r.start("b-search", "b", exclusive=True)
    b_read = r.start("b-read", "c", exclusive=False)
    await wait_set(b_search.entered, "b's search was blocked by a's")
    await wait_set(b_read.entered, "c's read was blocked by a's search")
    assert r.inside == {"a-search", "b-search", "b-read"}
    assert set(r.gates._gates) == {"a", "b", "c"}
    for call in (b_read, b_search, a_search):
        await r.finish(call)
    assert r.gates._gates == {}


async def test_a_gate_is_dropped_only_when_its_last_user_leaves() -> None:
    r = Recorder()
    first = r.start("first", "c", exclusive=True)
    await wait_set(first.entered, "first never entered")
    waiting = r.start("waiting", "c", exclusive=True)
    await settle()
    gate = r.gates._gates["c"]
    assert gate.users == 2
    await r.finish(first)
    await wait_set(waiting.entered, "the waiting call never entered")
    assert r.gates._gates == {"c": gate}  # still in use: the same gate, not a new one
    await r.finish(waiting)
    assert r.gates._gates == {}
    # A later call gets a fresh gate and works as before.
    again = r.start("again", "c", exclusive=True)
    await wait_set(again.entered, "a call after the gate was dropped never entered")
    assert r.gates._gates["c"] is not gate
    await r.finish(again)
    assert r.gates._gates == {}


async def test_cancelling_a_waiting_call_releases_its_place() -> None:
    r = Recorder()
    holder = r.start("holder", "c", exclusive=True)
    await wait_set(holder.entered, "holder never entered")
    waiter = r.start("waiter", "c", exclusive=True)
    parallel_waiter = r.start("parallel-waiter", "c", exclusive=False)
    await settle()
    assert r.gates._gates["c"].users == 3
    assert waiter.task is not None and parallel_waiter.task is not None
    waiter.task.cancel()
    parallel_waiter.task.cancel()
    await asyncio.wait({waiter.task, parallel_waiter.task}, timeout=WAIT_S)
    assert waiter.task.cancelled() and parallel_waiter.task.cancelled()
    assert not waiter.entered.is_set() and not parallel_waiter.entered.is_set()
    assert r.gates._gates["c"].users == 1

    await r.finish(holder)
    assert r.gates._gates == {}
    # No deadlock for the next caller of the same session, in either mode.
    nxt = r.start("next", "c", exclusive=True)
    await wait_set(nxt.entered, "the next exclusive call deadlocked after a cancelled waiter")
    await r.finish(nxt)
    reads = [r.start(f"read{i}", "c", exclusive=False) for i in range(2)]
    for read in reads:
        await wait_set(read.entered, f"{read.name} deadlocked after a cancelled waiter")
    for read in reads:
        await r.finish(read)
    assert r.gates._gates == {}


async def test_cancelling_the_holder_lets_the_waiter_in() -> None:
    r = Recorder()
    holder = r.start("holder", "c", exclusive=True)
    await wait_set(holder.entered, "holder never entered")
    waiter = r.start("waiter", "c", exclusive=True)
    await settle()
    assert not waiter.entered.is_set()
    assert holder.task is not None
    holder.task.cancel()
    await asyncio.wait({holder.task}, timeout=WAIT_S)
    assert holder.task.cancelled()
    await wait_set(waiter.entered, "the waiter never entered after the holder was cancelled")
    await r.finish(waiter)
    assert r.overlaps == [frozenset({"holder"}), frozenset({"waiter"})]
    assert r.gates._gates == {}


async def test_an_error_inside_a_call_releases_the_gate() -> None:
    gates = ExecutionGates()
    try:
        async with gates.run("c", exclusive=True):
            raise RuntimeError("tool bug")
    except RuntimeError as error:
        assert str(error) == "tool bug"
    assert gates._gates == {}

    async def enter() -> str:
        async with gates.run("c", exclusive=True):
            return "entered"

    assert await asyncio.wait_for(enter(), WAIT_S) == "entered"
