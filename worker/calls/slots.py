"""Admission shares and execution slots: how many calls one host key and one workspace
may hold at once, and how many run at once, overall and per workspace.

A *share* is taken once the call is authenticated and held until it is answered,
waiting included: one host key holds at most ``per_host`` calls, one workspace at most
``per_workspace_admitted``. A call beyond its share is answered at once
(``SESSION_QUERY_BUSY``), never parked: so one host's backlog (unknown callers,
far-future ``min_seq``, a flood of valid calls) bounds only itself, and the worker's
overall admission bound (``--max-admitted``) is never filled by one host.

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
from worker.contract.errors import busy

POLL_S: Final = 1.0  # a queued call notices a cancel within this; its deadline exactly


class Share:
    """One admitted call's place in its host's and its workspace's share."""

    __slots__ = ("_counts", "_keys")

    def __init__(self, counts: dict[tuple[str, str], int], keys: tuple[tuple[str, str], ...]):
        self._counts = counts
        self._keys = keys

    def release(self) -> None:
        for key in self._keys:
            left = self._counts[key] - 1
            if left:
                self._counts[key] = left
            else:
                del self._counts[key]
        self._keys = ()


class Shares:
    """The admitted calls per host key and per workspace (module docstring)."""

    def __init__(self, per_host: int, per_workspace: int) -> None:
        if per_host < 1 or per_workspace < 1:
            raise ValueError("share bounds must be >= 1")
        self.per_host = per_host
        self.per_workspace = per_workspace
        self._counts: dict[tuple[str, str], int] = {}

    def take(self, host: str | None, workspace: str) -> Share:
        """A share for a call of ``host`` (its key id; None: callers are not
        authenticated, so only the workspace bound applies) in ``workspace``; raises
        ``SESSION_QUERY_BUSY`` when either is full."""
        keys: tuple[tuple[str, str], ...] = (("workspace", workspace),)
        if host is not None:
            keys = (("host", host), *keys)
        for key in keys:
            bound = self.per_host if key[0] == "host" else self.per_workspace
            if self._counts.get(key, 0) >= bound:
                raise busy(key[0])
        for key in keys:
            self._counts[key] = self._counts.get(key, 0) + 1
        return Share(self._counts, keys)

    def held(self, kind: str, name: str) -> int:
        return self._counts.get((kind, name), 0)


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
