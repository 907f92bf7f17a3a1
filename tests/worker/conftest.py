"""Tool tests run against a real store; ``Spy`` records (and, where the SPEC scripts the
service, replaces) individual query-service methods."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.builders import header, plain, user
from worker.contract.deadline import CancelToken
from worker.contract.outcome import ToolReply
from worker.limits import ToolLimits
from worker.pipeline import Pipeline, ToolCall
from worker.tools.access import Caller
from worker.tools.registry import Tool, lookup

CALLER_HEADER = header("caller", created_at=10)
CALLER_EVENTS = [
    plain(0, "turn/start", {"turn": 1}),
    user(1, "prior needle"),
    plain(2, "step/start", {"turn": 1, "step": 1}),
]
CALLER_SESSION = (CALLER_HEADER, CALLER_EVENTS)
# How long a cancelled call is watched for replying before its service call settles.
SETTLE_WINDOW_S = 0.05


class Spy:
    """A real query service whose calls are recorded; ``scripted`` methods replace real ones."""

    def __init__(self, real: Any, scripted: dict[str, Callable[..., Any]] | None = None) -> None:
        self.real = real
        self.scripted = dict(scripted or {})
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name == "reading":  # a scope of reads, not a read: not recorded
            return self.real.reading  # type: ignore[no-any-return]
        target = self.scripted.get(name) or getattr(self.real, name)

        def method(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                self.calls.append((name, args, kwargs))
            return target(*args, **kwargs)

        return method

    def calls_to(self, name: str) -> list[tuple[tuple[Any, ...], dict[str, Any]]]:
        return [(a, k) for n, a, k in self.calls if n == name]


@dataclass
class Harness:
    tools: Pipeline
    spy: Spy
    caller: Caller | None = field(default_factory=lambda: Caller("caller"))

    async def call(self, tool: str, arguments: Any, **kwargs: Any) -> ToolReply:
        caller = kwargs.pop("caller", self.caller)
        return await self.tools.call(tool, arguments, caller, **kwargs)

    def real(self, name: str) -> Callable[..., Any]:
        return getattr(self.spy.real, name)  # type: ignore[no-any-return]


HarnessFactory = Callable[..., Harness]


@pytest.fixture
def make_harness(store_factory: Any) -> HarnessFactory:
    """``make_harness(sessions, live=("caller",), with_caller=True, config=None, **scripted)``."""

    def make(
        sessions: Sequence[tuple[dict[str, Any], Sequence[dict[str, Any]]]] = (),
        *,
        live: Sequence[str] = ("caller",),
        with_caller: bool = True,
        config: ToolLimits | None = None,
        read_window_max: int = 50,
        **scripted: Callable[..., Any],
    ) -> Harness:
        all_sessions = ([CALLER_SESSION] if with_caller else []) + list(sessions)
        real = store_factory(all_sessions, live=live, read_window_max=read_window_max)
        spy = Spy(real, scripted)
        return Harness(Pipeline(spy, config), spy)

    return make


class Gate:
    """Blocks a scripted service method until released (the service 'in flight')."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.release = threading.Event()
        # set for a tool placed on the loop: nothing runs beside the held call there, so
        # what would have happened meanwhile happens from inside it instead of a wait
        self.meanwhile: Callable[[], None] | None = None

    def hold(self, result: Callable[[], Any]) -> Callable[..., Any]:
        def method(*_args: Any, **_kwargs: Any) -> Any:
            self.started.set()
            if self.meanwhile is not None:
                self.meanwhile()
            else:
                assert self.release.wait(10)
            return result()

        return method

    async def wait_started(self, timeout: float = 10.0) -> None:
        """Return as soon as the scripted call has started; fail after ``timeout`` s."""
        await until(self.started.is_set, "the scripted call never started", timeout)


async def until(condition: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    """Return as soon as ``condition()`` holds; fail with ``what`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what} within {timeout:.0f} s")
        await asyncio.sleep(0.002)


@contextlib.asynccontextmanager
async def beside_another_call(harness: Harness, timeout: float = 10.0) -> AsyncIterator[None]:
    """Keep one other call in flight for the block, so that a call of a thread-placed tool
    started in it is handed to a worker thread (alone it runs on the loop: the pipeline's
    step 5): a trace waiting (step 4) for its caller's log to reach a seq it never
    reaches. It holds no slot or gate, and is cancelled when the block ends."""
    waiting = ToolCall("beside", "session_trace", {}, Caller("caller"), min_seq=1 << 40)
    polls = len(harness.spy.calls_to("last_seq"))
    task = asyncio.create_task(harness.tools.answer(waiting))
    await until(  # it is waiting in step 4
        lambda: len(harness.spy.calls_to("last_seq")) > polls,
        "the other call never started waiting",
        timeout,
    )
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def cancel_while_in_flight(
    harness: Harness, gate: Gate, reason: Any, tool: str, arguments: Any
) -> ToolReply:
    """Start a call, cancel it while the gated service call runs, then let the service settle.

    A tool placed on the loop (``Tool.placement``) blocks the loop for its whole run, so
    its cancel is sent from inside the held service call, the only moment it can land
    while that call is in flight. A thread-placed tool's call runs beside another call,
    so that it is handed to a worker thread and the cancel comes from the loop."""
    token = CancelToken()
    tool_found = lookup(tool)
    if isinstance(tool_found, Tool) and tool_found.on_loop:
        gate.meanwhile = lambda: token.cancel(reason)
        return await harness.call(tool, arguments, token=token)
    async with beside_another_call(harness):
        task = asyncio.create_task(harness.call(tool, arguments, token=token))
        await gate.wait_started()
        token.cancel(reason)
        # Nothing is expected to happen here: the call must stay pending until the service
        # settles. Watch the task for a short window; a wrong implementation that replies
        # early ends the wait at once instead of after a fixed sleep.
        await asyncio.wait({task}, timeout=SETTLE_WINDOW_S)
        assert not task.done(), "the call must wait for the service to settle"
        gate.release.set()
        return await task


def log_text(caplog: pytest.LogCaptureFixture) -> str:
    return "\n".join(r.getMessage() for r in caplog.records if r.name == "sessionq.tools")
