"""Embedded mode: both roles in one process, no broker (``sessionq serve``).

Session logs (a dsh root or files) are the event source: ``LogWatcher`` turns new logs,
appended events and removed logs into the same records the Kafka indexer applies, and
the store applies them batch by batch through the record path. Tool calls arrive over
HTTP and run through the same ``Pipeline`` as the Kafka worker.

Reconcile at start (``initial_ingest``): the store may hold sessions from an earlier run
whose logs changed while ``serve`` was down. The store records the log file every
session the watcher applied came from (``watched_sources``); after the first scan

* a recorded session that no watched log provides any more is deleted (a delete record
  through ``Store.apply``), unless its file is still there but unreadable right now;
* a recorded session whose log was rewritten (its stored events are no longer a prefix
  of the file: a differing event or header, or fewer events than stored) is deleted and
  applied again from the file's current content;
* a log that only grew is continued as usual (the first scan re-reads every file; what
  the store already holds is an identical re-delivery).

Sessions that ``sessionq ingest`` put in the same data dir from other paths have no
``watched_sources`` row and are never reconciled away.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
import uuid
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import orjson
from aiohttp import web
from pydantic import ValidationError

from indexer.errors import (
    SEQ_CONFLICT,
    SOURCE_CONFLICT,
    BatchAbortedError,
    RecordRejectedError,
    SessionqError,
)
from indexer.logs.importers.detect import LogFormat
from indexer.logs.watch import Emitted, LogWatcher
from indexer.metrics import Metrics
from indexer.model.records import DeleteRecord, HeaderRecord, record_session_id
from indexer.model.search import CwdFilter
from indexer.query.service import StoreQueryService
from indexer.query.types import SessionRecord
from indexer.redact import DEFAULT, Redaction
from indexer.stats import store_stats
from indexer.store.failure import describe
from indexer.store.maintenance.purge import PurgeReport
from indexer.store.records.store import Store
from worker.contract import boundary
from worker.contract.deadline import CancelToken
from worker.contract.envelopes import (
    MAX_REQUEST_BYTES,
    HttpCall,
    first_validation_error,
    reply_for,
)
from worker.contract.errors import SESSION_NOT_FOUND, HarnessError
from worker.http import source_agents as ext
from worker.http.admin import StoreAdmin
from worker.http.auth import OPEN_PATHS, bearer, token_matches
from worker.http.ops import ops_routes
from worker.limits import ToolLimits
from worker.manifest import manifest
from worker.pipeline import Pipeline, ToolCall
from worker.tools.access import (
    Caller,
    ResolvedCaller,
    header_authorized,
    record_authorized,
    resolve_caller,
)
from worker.tools.registry import TOOLS

log = logging.getLogger("sessionq.serve")

MAX_BODY_BYTES = MAX_REQUEST_BYTES  # the same bound as a Kafka request record
MAX_LISTED_SESSIONS = 500
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
# A watched session whose log was rewritten while serve was down fails with one of these.
REWRITTEN_CODES = frozenset({SEQ_CONFLICT, SOURCE_CONFLICT})


def _sessions(items: Sequence[Emitted]) -> set[str]:
    return {record_session_id(item.record) for item in items}


def _delete(session_id: str) -> Emitted:
    return Emitted(f"session:{session_id}", DeleteRecord(v=1, kind="delete", session_id=session_id))


@dataclass(slots=True)
class IngestStatus:
    ready: bool = False
    applied_records: int = 0
    rejected_records: int = 0
    last_applied_at: float | None = None
    last_scan_at: float | None = None
    pending_changes: int = 0
    rejected: dict[str, str] = field(default_factory=dict)
    store_error: str | None = None  # why the latest batch was not stored (e.g. disk full)


class Embedded:
    """Store writer + log watcher + query service + tools, in one process."""

    def __init__(
        self,
        sessions: Sequence[Path],
        data: Path,
        *,
        limits: ToolLimits | None = None,
        metrics: Metrics | None = None,
        token: str | None = None,
        retain_days: int | None = None,
        retention_check_s: float = 60.0,
        log_format: LogFormat | None = None,
        redaction: Redaction = DEFAULT,
    ) -> None:
        self.data = data
        self._token = token
        self.metrics = metrics if metrics is not None else Metrics("serve")
        self.store = Store(data, on_purge=self._purged, redaction=redaction)
        self.watcher = LogWatcher(list(sessions), format=log_format)
        self.service = StoreQueryService(data)
        self.pipeline = Pipeline(self.service, limits, metrics=self.metrics)
        self.status = IngestStatus()
        self._lock = asyncio.Lock()
        self.admin = StoreAdmin(
            self.store,
            self._lock,
            self.metrics,
            retain_days=retain_days,
            retention_check_s=retention_check_s,
        )

    def _purged(self, report: PurgeReport) -> None:
        self.metrics.purge_seconds.observe(report.seconds)
        self.metrics.purge_pending.set(0 if report.complete else 1)

    # ---- ingestion ----------------------------------------------------------------------------
    def _apply(
        self,
        items: Sequence[Emitted],
        *,
        rewritable: Collection[str] = (),
        rewritten: set[str] | None = None,
    ) -> None:
        """Apply records through the record path, then commit.

        Policy: a rejected record is logged and counted and the rest go on (the log is
        read again when it changes); a record that failed for another reason, or a lost
        batch, is retried: the watcher re-emits those sessions on its next scan. Every
        session applied from a log file has that file recorded as its watched source.

        At start (reconcile): a conflict on a session of ``rewritable`` means its log was
        rewritten; the session goes into ``rewritten`` and its later records are skipped
        (the caller deletes and re-reads it).
        """
        if not items:
            return
        started = time.perf_counter()
        retry: set[str] = set()
        applied_now = 0
        for item in items:
            sid = record_session_id(item.record)
            if rewritten is not None and sid in rewritten:
                continue
            try:
                applied = self.store.apply(item.record)
                if item.path is not None and isinstance(item.record, HeaderRecord):
                    self.store.tables.set_watched_source(sid, str(item.path.resolve()))
            except BatchAbortedError as exc:
                self._lost(items, exc.message)
                return
            except sqlite3.Error as exc:  # recording the watched source failed
                self.store.abort()
                self._lost(items, describe(exc))
                return
            except RecordRejectedError as exc:
                if rewritten is not None and sid in rewritable and exc.code in REWRITTEN_CODES:
                    log.warning(
                        "log of session %s changed while serve was down (%s): "
                        "deleting and reading it again",
                        sid,
                        exc.message,
                    )
                    rewritten.add(sid)
                    continue
                self.status.rejected_records += 1
                self.metrics.dlq_records.labels("embedded").inc()
                log.warning("rejected %s record of %s: %s", item.record.kind, item.key, exc)
                continue
            except SessionqError as exc:
                log.error(
                    "failed %s record of %s, retrying on the next scan: %s",
                    item.record.kind,
                    item.key,
                    exc.message,
                )
                self.status.store_error = exc.message
                retry.add(record_session_id(item.record))
                continue
            if applied.noop:
                self.metrics.records_noop.inc()
            else:
                applied_now += 1
                self.metrics.records_applied.labels(applied.kind).inc()
        try:
            self.store.commit()
        except BatchAbortedError as exc:
            self._lost(items, exc.message)
            return
        if not retry:
            self.status.store_error = None
        self.watcher.rewind(retry)
        self.status.applied_records += applied_now
        self.metrics.commit_seconds.observe(time.perf_counter() - started)
        self.status.last_applied_at = time.time()
        self.metrics.last_applied.set(self.status.last_applied_at)

    def _lost(self, items: Sequence[Emitted], cause: str) -> None:
        """A lost batch: nothing of it is stored; its sessions are read again next scan,
        and ``/readyz`` and ``/v1/status`` name the cause (``store_error``) until a batch
        commits again."""
        log.error("batch lost, retrying on the next scan: %s", cause)
        self.status.store_error = cause
        self.watcher.rewind(_sessions(items))

    def _scan(self) -> list[Emitted]:
        items = self.watcher.scan()
        self.status.last_scan_at = time.time()
        self.status.rejected = dict(self.watcher.rejected)
        return items

    async def _apply_all(
        self,
        items: Sequence[Emitted],
        progress: Callable[[int, int], None] | None = None,
        *,
        rewritable: Collection[str] = (),
        rewritten: set[str] | None = None,
    ) -> None:
        self.status.pending_changes = len(items)
        step = 200
        for i in range(0, len(items), step):
            await asyncio.to_thread(
                self._apply, items[i : i + step], rewritable=rewritable, rewritten=rewritten
            )
            self.status.pending_changes = max(0, len(items) - i - step)
            if progress is not None:
                progress(min(i + step, len(items)), len(items))

    async def sync_once(self, progress: Callable[[int, int], None] | None = None) -> int:
        """Scan the logs once and apply what changed; returns the records applied."""
        async with self._lock:
            items = await asyncio.to_thread(self._scan)
            await self._apply_all(items, progress)
            return len(items)

    def _first_scan(self) -> tuple[list[Emitted], set[str]]:
        """The first scan, preceded by the deletes reconciling the store with the logs
        (module docstring): sessions whose log is gone, and sessions whose log now holds
        fewer events than stored. Returns the records and the sessions applied from
        watched logs before (the ones a conflict may show rewritten)."""
        items = self._scan()
        recorded = self.store.tables.watched_sources()
        provided = self.watcher.sources()
        unread = {str(p.resolve()) for p in self.watcher.unread()}
        deletes: list[Emitted] = []
        for sid, path in sorted(recorded.items()):
            if sid not in provided:
                if path not in unread:
                    log.info("log of session %s (%s) is gone: deleting the session", sid, path)
                    deletes.append(_delete(sid))
                continue
            state = self.store.tables.session_state(sid)
            if state is not None and state.next_seq > provided[sid][1]:
                log.warning(
                    "log of session %s (%s) is shorter than stored: deleting and reading it again",
                    sid,
                    path,
                )
                deletes.append(_delete(sid))
        return deletes + items, set(recorded)

    async def initial_ingest(self, progress: Callable[[int, int], None] | None = None) -> None:
        """The first scan, reconciled with what the store holds from earlier runs."""
        async with self._lock:
            items, rewritable = await asyncio.to_thread(self._first_scan)
            rewritten: set[str] = set()
            await self._apply_all(items, progress, rewritable=rewritable, rewritten=rewritten)
            if rewritten:
                await asyncio.to_thread(self._apply, [_delete(sid) for sid in sorted(rewritten)])
                self.watcher.rewind(rewritten)
                again = await asyncio.to_thread(self._scan)
                await self._apply_all(again)
        self.status.ready = True
        self.metrics.ready.set(1)

    async def watch(self, interval_s: float = 0.2) -> None:
        while True:
            await asyncio.sleep(interval_s)
            try:
                await self.sync_once()
                await self.admin.tick()
            except Exception:
                log.exception("log scan failed; retrying")

    async def ready(self) -> bool:
        return self.status.ready

    def _readiness_notes(self) -> dict[str, str]:
        error = self.status.store_error
        return {} if error is None else {"store_error": error}

    def close(self) -> None:
        self.service.close()
        self.store.close()

    # ---- HTTP ---------------------------------------------------------------------------------
    def app(self) -> web.Application:
        app = web.Application(client_max_size=MAX_BODY_BYTES, middlewares=[self._guard])
        app.add_routes(ops_routes(self.metrics, self.ready, self._readiness_notes))
        app.add_routes(self.admin.routes(token_required=self._token is not None))
        app.add_routes(
            [
                web.post("/v1/call", self._call_view),
                web.get("/v1/manifest", self._manifest_view),
                web.get("/v1/status", self._status_view),
                web.get("/v1/sessions", self._sessions_view),
                web.get("/", self._console_view),
            ]
        )
        return app

    @staticmethod
    def _bad(status: int, code: str, message: str) -> web.Response:
        return web.json_response({"error": {"code": code, "message": message}}, status=status)

    def _authorized(self, request: web.Request) -> bool:
        """With a token: every path but the probes needs ``Authorization: Bearer``; the
        console page ``/`` also takes ``?token=`` (a browser cannot send the header when
        the page is opened; the page moves it into sessionStorage and off the URL)."""
        token = self._token
        if token is None or request.path in OPEN_PATHS:
            return True
        if token_matches(bearer(request.headers.get("Authorization")), token):
            return True
        return request.path == "/" and token_matches(request.query.get("token"), token)

    @web.middleware
    async def _guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if not self._authorized(request):
            response = self._bad(401, "UNAUTHENTICATED", "a valid bearer token is required")
            response.headers["WWW-Authenticate"] = "Bearer"
            return response
        try:
            return await handler(request)
        except web.HTTPRequestEntityTooLarge:
            return self._bad(
                413, "PAYLOAD_TOO_LARGE", f"request body exceeds {MAX_BODY_BYTES} bytes"
            )

    async def _call_view(self, request: web.Request) -> web.Response:
        received_ms = time.time() * 1000
        body = await request.read()
        try:
            obj = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            return self._bad(400, "BAD_REQUEST", f"body is not JSON: {exc}")
        obj, extensions = ext.take_extensions(obj)
        try:
            call = HttpCall.model_validate(obj)
        except ValidationError as exc:
            return self._bad(400, "BAD_REQUEST", first_validation_error(exc))
        if call.tool not in TOOLS:
            return self._bad(
                404,
                "UNKNOWN_TOOL",
                f"unknown tool {call.tool!r}; known tools: {', '.join(sorted(TOOLS))}",
            )
        tool_request = call.to_request(str(uuid.uuid4()))
        try:
            tool_request = await ext.restrict_request(self.service, tool_request, extensions)
        except ext.ExtensionError as exc:
            return self._bad(400, "BAD_REQUEST", str(exc))
        result = await self.pipeline.answer(
            ToolCall.from_request(tool_request, sent_ms=received_ms)
        )
        reply = reply_for(tool_request.id, result)
        return web.Response(body=reply.encode(), content_type="application/json")

    async def _manifest_view(self, _: web.Request) -> web.Response:
        return web.json_response(manifest(self.pipeline.limits))

    async def _status_view(self, _: web.Request) -> web.Response:
        stats = await asyncio.to_thread(store_stats, self.data)
        s = self.status
        now = time.time()
        return web.json_response(
            {
                "ready": s.ready,
                "store_error": s.store_error,
                "sessions": stats.sessions,
                "events": stats.events,
                "documents": stats.documents,
                "workspaces": stats.workspaces,
                "applied_records": s.applied_records,
                "rejected_records": s.rejected_records,
                "last_applied_at": s.last_applied_at,
                "lag": {
                    "pending_changes": s.pending_changes,
                    "seconds_since_scan": None if s.last_scan_at is None else now - s.last_scan_at,
                },
                "rejected_files": s.rejected,
            }
        )

    @staticmethod
    def _caller_of(request: web.Request) -> Caller | web.Response:
        session_id = request.query.get("caller", "")
        if not session_id:
            return Embedded._bad(
                400, "BAD_REQUEST", "caller is required: /v1/sessions?caller=<session id>"
            )
        step_text = request.query.get("step_seq")
        if step_text is None or step_text == "":
            return Caller(session_id)
        if not step_text.isdigit():
            return Embedded._bad(400, "BAD_REQUEST", "step_seq must be a non-negative integer")
        return Caller(session_id, int(step_text))

    async def _visible_sessions(self, caller: ResolvedCaller) -> list[SessionRecord]:
        """The sessions the caller may see: the tools' workspace rule (same ``cwd``; a
        caller without one sees only itself)."""
        token = CancelToken()
        cwd = caller.header.cwd
        if cwd is None:
            own = await boundary.call(
                token, "caller session listing", lambda: self.service.get_session(caller.id)
            )
            records = [] if own is None else [own]
        else:
            records = await boundary.call(
                token,
                "workspace session listing",
                lambda: self.service.filter_sessions([CwdFilter((cwd,))]),
            )
        return [r for r in records if record_authorized(r, caller)][:MAX_LISTED_SESSIONS]

    async def _sessions_view(self, request: web.Request) -> web.Response:
        caller = self._caller_of(request)
        if isinstance(caller, web.Response):
            return caller
        try:
            agents = ext.agents_of_query(request.query)
            resolved = await resolve_caller(self.service, caller, CancelToken())
            records = await self._visible_sessions(resolved)
            records = [r for r in records if agents is None or r.header.agent in agents]
        except ext.ExtensionError as exc:
            return self._bad(400, "BAD_REQUEST", str(exc))
        except HarnessError as exc:
            status = 404 if exc.code == SESSION_NOT_FOUND else 500
            return self._bad(status, exc.code, exc.message)
        titles = await asyncio.to_thread(
            self.service.read_title_snapshots, [r.header.id for r in records]
        )
        title_of: dict[str, Any] = {
            t.session_id: t.title.title if t.title else None
            for t in titles
            if t.header is not None and header_authorized(t.header, resolved)
        }
        return web.json_response(
            [
                {
                    "id": r.header.id,
                    "cwd": r.header.cwd,
                    "parent": r.header.parent_session,
                    "created_at": r.header.created_at,
                    "source_agent": r.header.agent,
                    "title": title_of.get(r.header.id),
                    "last_step_seq": await asyncio.to_thread(
                        self.service.last_step_start_seq, r.header.id
                    ),
                }
                for r in records
            ]
        )

    async def _console_view(self, _: web.Request) -> web.Response:
        page = resources.files("worker.http.console").joinpath("index.html").read_text()
        return web.Response(text=page, content_type="text/html")
