"""Execution modes per caller session: the two searches run exclusively, the three exact
reads run in parallel with each other (SPEC §9.1)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Final

EXCLUSIVE_TOOLS: Final = frozenset({"session_search", "session_event_search"})


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
    async def run(self, caller: str, tool: str) -> AsyncIterator[None]:
        gate = self._gates.setdefault(caller, _CallerGate())
        gate.users += 1
        try:
            async with gate.hold(tool in EXCLUSIVE_TOOLS):
                yield
        finally:
            gate.users -= 1
            if gate.users == 0:
                self._gates.pop(caller, None)
