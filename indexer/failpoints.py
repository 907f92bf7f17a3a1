"""Fail-points: named places in the store's protocols where a crash test kills the
process, to prove that a crash at exactly that step loses nothing.

They are off unless a role is started with the explicit test setting ``failpoint``
(``SESSIONQ_FAILPOINT=<point>:<n>``, read by the role's settings like any other
setting); product code only calls ``FailPoints.reach(point)``, which is a no-op then.
``<point>:<n>`` kills the process (exit status 137, as ``kill -9`` leaves it) on the
n-th time the point is reached. The points:

* ``after-index-commit`` — a batch's Tantivy commit landed, its SQLite commit did not
  (``indexer.store.records.checkpoint``);
* ``recompress-midway`` — n runs of a dictionary recompression committed
  (``indexer.store.blocks.dictionaries``);
* ``migrate-halfway`` — half of an older dir's sessions migrated, inside the migration's
  one transaction (``indexer.store.tables.migrate``).
"""

from __future__ import annotations

import os
from typing import Final

POINTS: Final = ("after-index-commit", "recompress-midway", "migrate-halfway")
KILLED_STATUS: Final = 137


class FailPoints:
    """The armed point (or none) and how often each point was reached."""

    def __init__(self, point: str | None = None, nth: int = 1) -> None:
        if point is not None and point not in POINTS:
            raise ValueError(f"unknown fail-point {point!r}; known: {', '.join(POINTS)}")
        if nth < 1:
            raise ValueError(f"a fail-point fires on the n-th pass, n >= 1 (got {nth})")
        self.point = point
        self.nth = nth
        self._passes: dict[str, int] = {}

    @classmethod
    def parse(cls, spec: str | None) -> FailPoints:
        """``<point>:<n>`` (``<point>`` alone is ``<point>:1``); None or empty: disarmed."""
        if not spec:
            return cls()
        point, _, count = spec.partition(":")
        try:
            nth = int(count) if count else 1
        except ValueError:
            raise ValueError(f"fail-point {spec!r}: the count is not an integer") from None
        return cls(point, nth)

    def reach(self, point: str) -> None:
        """Count one pass of ``point``; kill the process at the armed pass."""
        if point != self.point:
            return
        self._passes[point] = self._passes.get(point, 0) + 1
        if self._passes[point] >= self.nth:
            os._exit(KILLED_STATUS)


DISARMED: Final = FailPoints()
