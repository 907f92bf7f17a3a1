"""Which request offsets may be committed: a partition's committable offset is the lowest
one still in flight (everything below it has been answered and acknowledged)."""

from __future__ import annotations


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
