"""Execution modes per caller session: exclusive tools (the two searches) run alone, the
parallel ones (the three exact reads) alongside each other (SPEC §9.1). Which tool is
which is the registry's ``Tool.mode``."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator


class _CallerGate:
    """A readers/writer gate: parallel calls share it, an exclusive call holds it alone."""

    def __init__(self) -> None:
        self._cond = asyncio.Condition()
        self._readers = 0
        self._writer = False
        self.users = 0

    @contextlib.asynccontextmanager
    async def hold(self, exclusive: bool) -> AsyncIterator[None]:
        async with self._cond:
            if exclusive:
                await self._cond.wait_for(lambda: not self._writer and self._readers == 0)
                self._writer = True
            else:
                await self._cond.wait_for(lambda: not self._writer)
                self._readers += 1
        try:
            yield
        finally:
            async with self._cond:
                if exclusive:
                    self._writer = False
                else:
                    self._readers -= 1
                self._cond.notify_all()


class ExecutionGates:
    """One gate per caller session, dropped when nobody uses it."""

    def __init__(self) -> None:
        self._gates: dict[str, _CallerGate] = {}

    @contextlib.asynccontextmanager
    async def run(self, caller: str, *, exclusive: bool) -> AsyncIterator[None]:
        gate = self._gates.setdefault(caller, _CallerGate())
        gate.users += 1
        try:
            async with gate.hold(exclusive):
                yield
        finally:
            gate.users -= 1
            if gate.users == 0:
                self._gates.pop(caller, None)
