"""Erasure in embedded mode: the admin endpoint ``POST /v1/admin/delete`` of ``sessionq
serve``.

The deletes are applied through the record loop and committed at once, by the process
that writes the data dir: this one between two passes of its local source, or, when
another process writes, in a one-shot turn of the writer lease
(``LocalSource.write``). The commit runs the purge pass
(``indexer.store.maintenance.purge``) unless one ran less than its interval ago.
``--retain-days`` deletes go the same way, from the writer's housekeeping
(``indexer.sources.local.housekeeping``).

The endpoint needs ``serve`` to run with a bearer token (``--token-file``): the token
guard of every ``/v1`` path then admits only callers holding it. Without a token it
refuses (403): an unauthenticated loopback API may read, never erase.

Body ``{"session_ids": ["…", …]}`` (1 to ``MAX_IDS`` strings); answer
``{"results": [{"session_id": "…", "outcome": "deleted" | "unknown"}, …],
"purge": {"complete": …, "seconds": …} | null}`` (``null``: the pass comes later). A
deleted session whose log file is still watched is read again only when its log
changes; remove the log to keep it erased.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import orjson
from starlette.requests import Request
from starlette.responses import Response

from indexer.errors import BatchAbortedError, SessionqError
from indexer.model.records import DeleteRecord
from indexer.sources.loop import RecordLoop
from indexer.store.maintenance.purge import PurgeReport
from indexer.store.records.store import Store
from worker.local_service import LocalService
from worker.web.asgi import Handler, error_reply, json_reply

log = logging.getLogger("sessionq.serve.admin")

MAX_IDS: Final = 1000
DELETE_PATH: Final = "/v1/admin/delete"


@dataclass(frozen=True, slots=True)
class Deleted:
    """Each id's outcome and the purge pass the commit ran (None: a later one)."""

    outcomes: list[tuple[str, str]]
    purge: PurgeReport | None


class StoreAdmin:
    """Deletes sessions from the embedded store on request."""

    def __init__(self, local: LocalService) -> None:
        self.local = local

    def _delete_now(self, store: Store, session_ids: Sequence[str]) -> Deleted:
        """Apply one delete per id and commit (in a worker thread, with the writer's
        store); an id that fails aborts the whole request."""
        loop = RecordLoop(store, self.local.metrics)
        outcomes = []
        passes = store.purger.passes
        try:
            for sid in session_ids:
                result = loop.apply(DeleteRecord(v=1, kind="delete", session_id=sid))
                if result.error is not None:
                    raise result.error
                assert result.applied is not None
                outcomes.append((sid, "unknown" if result.applied.noop else "deleted"))
            loop.commit()
        except SessionqError:
            store.abort()
            raise
        purge = store.purger.last if store.purger.passes > passes else None
        return Deleted(outcomes, purge)

    async def delete(self, session_ids: Sequence[str]) -> Deleted:
        source = self.local.source
        if source is None:
            raise SessionqError("this server watches no logs and writes no data dir")
        ids = list(dict.fromkeys(session_ids))
        return await source.write(lambda store: self._delete_now(store, ids))

    def routes(self, *, token_required: bool) -> dict[tuple[str, str], Handler]:
        return {("POST", DELETE_PATH): self._view(token_required)}

    def _view(self, enabled: bool) -> Handler:
        async def delete_view(request: Request) -> Response:
            if not enabled:
                return error_reply(
                    403,
                    "ADMIN_DISABLED",
                    "admin endpoints need serve to run with --token-file (a bearer token)",
                )
            ids = _session_ids(await request.body())
            if isinstance(ids, str):
                return error_reply(400, "BAD_REQUEST", ids)
            try:
                done = await self.delete(ids)
            except BatchAbortedError as exc:
                return error_reply(500, "STORE_ERROR", f"nothing was deleted: {exc.message}")
            except SessionqError as exc:
                return error_reply(500, "STORE_ERROR", f"nothing was deleted: {exc.message}")
            deleted = sum(1 for _, o in done.outcomes if o == "deleted")
            unknown = len(done.outcomes) - deleted
            log.info(
                "admin delete: %d deleted, %d unknown",
                deleted,
                unknown,
                extra={"deleted": deleted, "unknown": unknown},
            )
            purge = done.purge
            return json_reply(
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
