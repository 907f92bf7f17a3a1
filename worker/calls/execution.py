"""Execution modes per caller session: exclusive tools (the two searches) run alone, the
parallel ones (the three exact reads) alongside each other (SPEC §9.1). Which tool is
which is the registry's ``Tool.mode``.

Every call passes a gate, and almost every one finds it free (one call per caller at a
time is the usual case), so entering and leaving a free gate are a few attribute
updates: no lock, no condition, no generator-based context manager. Only a call that
must wait parks, on a future of its own; whoever leaves the gate wakes every parked
call, and each re-checks (a condition's ``notify_all`` and ``wait_for``).
"""

from __future__ import annotations

import asyncio
from types import TracebackType


class _CallerGate:
    """A readers/writer gate: parallel calls share it, an exclusive call holds it alone.

    ``users`` counts the calls holding or waiting for it (``ExecutionGates`` drops it at
    zero). Leaving never awaits, so a cancellation cannot interrupt a release.
    """

    __slots__ = ("_parked", "readers", "users", "writer")

    def __init__(self) -> None:
        self.readers = 0
        self.writer = False
        self.users = 0
        self._parked: list[asyncio.Future[None]] = []

    def _free_for(self, exclusive: bool) -> bool:
        return not self.writer and (not exclusive or self.readers == 0)

    async def enter(self, exclusive: bool) -> None:
        while not self._free_for(exclusive):
            parked: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._parked.append(parked)
            try:
                await parked
            finally:  # woken, or cancelled while parked
                if parked in self._parked:
                    self._parked.remove(parked)
        if exclusive:
            self.writer = True
        else:
            self.readers += 1

    def leave(self, exclusive: bool) -> None:
        if exclusive:
            self.writer = False
        else:
            self.readers -= 1
        if not self._parked:
            return
        parked, self._parked = self._parked, []
        for waiter in parked:
            if not waiter.done():
                waiter.set_result(None)


class _Passage:
    """``async with`` one gate, in one mode (``ExecutionGates.run``)."""

    __slots__ = ("_caller", "_exclusive", "_gate", "_gates")

    def __init__(self, gates: ExecutionGates, caller: str, exclusive: bool) -> None:
        self._gates = gates
        self._caller = caller
        self._exclusive = exclusive
        self._gate: _CallerGate | None = None

    async def __aenter__(self) -> None:
        gate = self._gates.take(self._caller)
        try:
            await gate.enter(self._exclusive)
        except BaseException:
            self._gates.give_back(self._caller, gate)
            raise
        self._gate = gate

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        gate = self._gate
        assert gate is not None, "left a gate that was never entered"
        self._gate = None
        gate.leave(self._exclusive)
        self._gates.give_back(self._caller, gate)


class ExecutionGates:
    """One gate per caller session, dropped when nobody uses it."""

    def __init__(self) -> None:
        self._gates: dict[str, _CallerGate] = {}

    def run(self, caller: str, *, exclusive: bool) -> _Passage:
        """``async with gates.run(caller, exclusive=...)``: the body runs in that mode."""
        return _Passage(self, caller, exclusive)

    def take(self, caller: str) -> _CallerGate:
        gate = self._gates.get(caller)
        if gate is None:
            gate = self._gates[caller] = _CallerGate()
        gate.users += 1
        return gate

    def give_back(self, caller: str, gate: _CallerGate) -> None:
        gate.users -= 1
        if gate.users == 0 and self._gates.get(caller) is gate:
            del self._gates[caller]
