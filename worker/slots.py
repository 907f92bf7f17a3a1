"""Execution slots: how many calls run at once, overall and per workspace (issue 10).

A call takes a slot only to *run* (gate → arguments → caller → query → rendering); a
call still waiting for its caller or ``min_seq`` holds none, so requests that can never
run (an unknown caller, a far-future ``min_seq``) cannot starve the ones that can. One
workspace holds at most ``per_workspace`` of the ``total`` slots, so a flood from one
workspace leaves the others room. Waiting for a slot ends with the call's deadline or
cancellation, like every other wait (a cancel is noticed within ``POLL_S``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Final

from worker.contract.deadline import CancelToken

POLL_S: Final = 1.0  # a queued call notices a cancel within this; its deadline exactly


class Slots:
    def __init__(self, total: int, per_workspace: int) -> None:
        if total < 1 or per_workspace < 1:
            raise ValueError("slot counts must be >= 1")
        self.total = total
        self.per_workspace = min(per_workspace, total)
        self._all = asyncio.Semaphore(total)
        self._workspaces: dict[str, tuple[asyncio.Semaphore, list[int]]] = {}

    @staticmethod
    async def _acquire(semaphore: asyncio.Semaphore, token: CancelToken) -> None:
        """Acquire, waking at the deadline (or once a second, to notice a cancel): a
        thousand queued calls must not spin the loop."""
        while True:
            token.check()
            if not semaphore.locked():
                await semaphore.acquire()
                return
            deadline = token.deadline
            wait = POLL_S if deadline is None else max(0.001, min(POLL_S, deadline.remaining()))
            try:
                await asyncio.wait_for(semaphore.acquire(), wait)
                return
            except TimeoutError:
                continue

    @contextlib.asynccontextmanager
    async def hold(self, workspace: str, token: CancelToken) -> AsyncIterator[None]:
        """One running slot for a call of ``workspace``; raises the call's abort when
        its deadline passes or it is cancelled while queued."""
        semaphore, users = self._workspaces.setdefault(
            workspace, (asyncio.Semaphore(self.per_workspace), [0])
        )
        users[0] += 1
        try:
            await self._acquire(semaphore, token)
            try:
                await self._acquire(self._all, token)
                try:
                    yield
                finally:
                    self._all.release()
            finally:
                semaphore.release()
        finally:
            users[0] -= 1
            if users[0] == 0:
                self._workspaces.pop(workspace, None)
