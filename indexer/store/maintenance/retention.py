"""Age-based retention (``--retain-days N``): which sessions are past it.

A session expires when its newest event (the one with the highest seq; the header's
``createdAt`` for a session without events) is more than N days older than the
checking replica's clock. The store never deletes on its own account: the Kafka indexer
publishes a delete record per expired session to the events topic, keyed like the
session's other records, so every replica applies the same delete at the same place in
the session's partition; ``serve`` (no broker) applies the deletes directly.

Each check is bounded (``limit`` sessions, oldest first) and skips sessions asked for
within ``resend_after_s``: their delete record is on its way back through the topic, and
only if it never arrives (a lost send) is it sent again.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from indexer.store.tables.sqlite_tables import SqliteTables

DAY_MS: Final = 24 * 3600 * 1000
CHECK_LIMIT: Final = 500  # sessions one check deletes at most
RESEND_AFTER_S: Final = 600.0


@dataclass(frozen=True, slots=True)
class Expired:
    session_id: str
    routing_key: str  # the events topic key of the session (``SessionHeader.routing_key``)
    last_event_ms: int


class Retention:
    """Selects expired sessions, remembering which ones it asked to delete."""

    def __init__(
        self,
        retain_days: int,
        *,
        limit: int = CHECK_LIMIT,
        resend_after_s: float = RESEND_AFTER_S,
    ) -> None:
        if retain_days < 1:
            raise ValueError("retain_days must be >= 1")
        self.retain_days = retain_days
        self.limit = limit
        self.resend_after_s = resend_after_s
        self._asked: dict[str, float] = {}  # session id -> monotonic time of the last ask

    def forget(self, session_ids: Iterable[str]) -> None:
        """These asks failed: the next check may select the sessions again."""
        for sid in session_ids:
            self._asked.pop(sid, None)

    def cutoff_ms(self, now_s: float | None = None) -> int:
        """Sessions whose newest event is older than this (ms since the epoch) expire."""
        now_s = time.time() if now_s is None else now_s
        return int(now_s * 1000) - self.retain_days * DAY_MS

    def expired(self, tables: SqliteTables, now_s: float | None = None) -> list[Expired]:
        """At most ``limit`` expired sessions not asked for recently, oldest first; they
        count as asked from now on."""
        clock = time.monotonic()
        self._asked = {
            sid: at for sid, at in self._asked.items() if clock - at < self.resend_after_s
        }
        rows = tables.idle_sessions(self.cutoff_ms(now_s), self.limit + len(self._asked))
        out = [
            Expired(sid, cwd if cwd is not None else f"session:{sid}", last)
            for sid, cwd, last in rows
            if sid not in self._asked
        ][: self.limit]
        for e in out:
            self._asked[e.session_id] = clock
        return out
