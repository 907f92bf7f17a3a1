"""Which request offsets may be committed: a partition's committable offset is the lowest
one still in flight (everything below it has been answered and acknowledged). Also the
shape of a worker's requests feed (``RequestSource``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

from indexer.kafka.client import InRecord


class RequestSource(Protocol):
    """A consumer-group member on the requests topic that commits request offsets."""

    topic: str

    async def start(
        self,
        on_revoked: Callable[[list[int]], Awaitable[None]],
        on_assigned: Callable[[list[int]], Awaitable[None]],
    ) -> None: ...

    async def poll(self, timeout_ms: int, max_records: int) -> list[InRecord]: ...

    async def commit(self, offsets: dict[int, int]) -> None: ...

    async def lag(self) -> dict[int, int]: ...

    async def stop(self) -> None: ...


class OffsetTracker:
    def __init__(self) -> None:
        self._open: dict[int, set[int]] = {}
        self._next: dict[int, int] = {}

    def started(self, partition: int, offset: int) -> None:
        self._open.setdefault(partition, set()).add(offset)
        self._next[partition] = max(self._next.get(partition, 0), offset + 1)

    def finished(self, partition: int, offset: int) -> None:
        self._open.get(partition, set()).discard(offset)

    def committable(self) -> dict[int, int]:
        """Next offset to commit per partition."""
        out = {}
        for p, nxt in self._next.items():
            pending = self._open.get(p)
            out[p] = min(pending) if pending else nxt
        return out

    def forget(self, partitions: list[int]) -> None:
        for p in partitions:
            self._open.pop(p, None)
            self._next.pop(p, None)

    def in_flight(self) -> int:
        return sum(len(s) for s in self._open.values())
