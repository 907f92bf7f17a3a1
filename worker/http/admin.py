"""Erasure in embedded mode: the admin endpoint ``POST /v1/admin/delete`` and the
``--retain-days`` check of ``sessionq serve``.

Both apply delete records through the record path (``Store.apply``) under the ingest
lock, so they never interleave with a watcher batch, and commit at once: the commit runs
the purge pass (``indexer.store.maintenance.purge``) unless one ran less than its interval ago.

The endpoint needs ``serve`` to run with a bearer token (``--token-file``): the token
guard of every ``/v1`` path then admits only callers holding it. Without a token it
refuses (403): an unauthenticated loopback API may read, never erase.

Body ``{"session_ids": ["…", …]}`` (1 to ``MAX_IDS`` strings); answer
``{"results": [{"session_id": "…", "outcome": "deleted" | "unknown"}, …],
"purge": {"complete": …, "seconds": …} | null}`` (``null``: the pass comes later). A
deleted session whose log file is still watched is not read again while ``serve`` runs
(only appended events would be, and they are rejected: the session has no header any
more); a restart reads the file again, so remove the log to keep it erased.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import orjson
from aiohttp import web

from indexer.errors import BatchAbortedError, SessionqError
from indexer.metrics import Metrics
from indexer.model.records import DeleteRecord
from indexer.store.maintenance.purge import PurgeReport
from indexer.store.maintenance.retention import Retention
from indexer.store.records.store import Store

log = logging.getLogger("sessionq.serve.admin")

MAX_IDS: Final = 1000
DELETE_PATH: Final = "/v1/admin/delete"


@dataclass(frozen=True, slots=True)
class Deleted:
    """Each id's outcome and the purge pass the commit ran (None: a later one)."""

    outcomes: list[tuple[str, str]]
    purge: PurgeReport | None


class StoreAdmin:
    """Deletes sessions from the embedded store: on request, and by retention."""

    def __init__(
        self,
        store: Store,
        lock: asyncio.Lock,
        metrics: Metrics,
        *,
        retain_days: int | None = None,
        retention_check_s: float = 60.0,
    ) -> None:
        self.store = store
        self.lock = lock
        self.metrics = metrics
        self.retention = None if retain_days is None else Retention(retain_days)
        self.retention_check_s = retention_check_s
        self._next_check = 0.0
        self.expired = 0  # sessions deleted by retention

    def _delete_now(self, session_ids: Sequence[str]) -> Deleted:
        """Apply one delete per id and commit (in a worker thread, under the lock)."""
        outcomes = []
        passes = self.store.purger.passes
        try:
            for sid in session_ids:
                applied = self.store.apply(DeleteRecord(v=1, kind="delete", session_id=sid))
                outcomes.append((sid, "unknown" if applied.noop else "deleted"))
                if not applied.noop:
                    self.metrics.records_applied.labels("delete").inc()
            self.store.commit()
        except SessionqError:
            self.store.abort()
            raise
        purge = self.store.purger.last if self.store.purger.passes > passes else None
        return Deleted(outcomes, purge)

    async def delete(self, session_ids: Sequence[str]) -> Deleted:
        async with self.lock:
            return await asyncio.to_thread(self._delete_now, list(dict.fromkeys(session_ids)))

    def _expire_now(self) -> None:
        """One retention check (in a worker thread, under the lock)."""
        assert self.retention is not None
        expired = self.retention.expired(self.store.tables)
        if not expired:
            return
        done = self._delete_now([e.session_id for e in expired])
        gone = sum(1 for _, outcome in done.outcomes if outcome == "deleted")
        self.expired += gone
        self.metrics.retention_deletes.inc(gone)
        log.info(
            "retention: deleted %d sessions whose newest event is older than %d days"
            " (the oldest at %d ms)",
            gone,
            self.retention.retain_days,
            expired[0].last_event_ms,
        )

    async def tick(self) -> None:
        """The watch loop's tick: the retention check when due, then a due purge pass."""
        async with self.lock:
            now = time.monotonic()
            if self.retention is not None and now >= self._next_check:
                self._next_check = now + self.retention_check_s
                await asyncio.to_thread(self._expire_now)
            if self.store.purger.due():
                await asyncio.to_thread(self.store.purge_if_due)

    def routes(self, *, token_required: bool) -> list[web.RouteDef]:
        return [web.post(DELETE_PATH, self._view(token_required))]

    def _view(self, enabled: bool) -> Any:
        async def delete_view(request: web.Request) -> web.Response:
            if not enabled:
                return _bad(
                    403,
                    "ADMIN_DISABLED",
                    "admin endpoints need serve to run with --token-file (a bearer token)",
                )
            ids = _session_ids(await request.read())
            if isinstance(ids, str):
                return _bad(400, "BAD_REQUEST", ids)
            try:
                done = await self.delete(ids)
            except BatchAbortedError as exc:
                return _bad(500, "STORE_ERROR", f"nothing was deleted: {exc.message}")
            except SessionqError as exc:
                return _bad(500, "STORE_ERROR", f"nothing was deleted: {exc.message}")
            log.info(
                "admin delete: %d deleted, %d unknown",
                sum(1 for _, o in done.outcomes if o == "deleted"),
                sum(1 for _, o in done.outcomes if o == "unknown"),
            )
            purge = done.purge
            return web.json_response(
                {
                    "results": [{"session_id": s, "outcome": o} for s, o in done.outcomes],
                    "purge": None
                    if purge is None
                    else {"complete": purge.complete, "seconds": round(purge.seconds, 3)},
                }
            )

        return delete_view


def _session_ids(body: bytes) -> list[str] | str:
    """The body's ids, or what is wrong with it."""
    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        return f"body is not JSON: {exc}"
    ids = obj.get("session_ids") if isinstance(obj, dict) else None
    if (
        not isinstance(ids, list)
        or not ids
        or len(ids) > MAX_IDS
        or not all(isinstance(i, str) and i for i in ids)
    ):
        return f'the body must be {{"session_ids": [...]}} with 1 to {MAX_IDS} non-empty strings'
    return ids


def _bad(status: int, code: str, message: str) -> web.Response:
    return web.json_response({"error": {"code": code, "message": message}}, status=status)
