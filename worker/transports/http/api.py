"""The HTTP API of ``sessionq serve``: tool calls, the manifest, status, the console's
reads (``console_api``) and page (``console_page``), the ops probes and the admin
endpoint.

Tool calls arrive over HTTP and run through the same ``Pipeline`` as the Kafka worker
(``worker.local_service``); the watched logs are applied by the local source
(``indexer.sources.local``), whose status ``/v1/status`` and ``/readyz`` show. A
transport only turns bytes into a call and a reply back into bytes.
"""

from __future__ import annotations

import asyncio
import os
import socket
import sqlite3
import time
from typing import Final

import orjson
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp

from indexer.sources.local import SourceStatus
from indexer.stats import StoreStats, store_stats
from indexer.store.failure import describe
from worker.calls.tool_call import ToolCall
from worker.contract.envelopes import (
    MAX_REQUEST_BYTES,
    HttpCall,
    encode_reply,
    first_validation_error,
)
from worker.contract.errors import UnknownToolError
from worker.contract.ids import RequestIds
from worker.contract.outcome import ToolReply
from worker.local_service import LocalService
from worker.manifest import manifest
from worker.tools import source_agents as ext
from worker.tools.registry import lookup
from worker.transports.http.admin import StoreAdmin
from worker.transports.http.console_api import ConsoleApi
from worker.transports.http.console_page import console_routes, is_asset_path
from worker.transports.http.ops import ops_routes, parse_listen
from worker.transports.http.reader_api import ReaderApi
from worker.web.asgi import Guarded, Routes, error_reply, json_reply
from worker.web.server import HttpServer
from worker.webguard.admit import Admission
from worker.webguard.origin import allowed_names
from worker.webguard.token import OPEN_PATHS

MAX_BODY_BYTES: Final = MAX_REQUEST_BYTES  # the same bound as a Kafka request record
LOOPBACK: Final = allowed_names("127.0.0.1")
REPLY_TYPE: Final = "application/json"


def _is_open(path: str) -> bool:
    """Answered without the token: the probes and the console's static files."""
    return path in OPEN_PATHS or is_asset_path(path)


class HttpApi:
    """The routes of ``serve`` over one ``LocalService``."""

    def __init__(self, local: LocalService, *, token: str | None = None) -> None:
        self.local = local
        self.data = local.data
        self.service = local.service
        self.pipeline = local.pipeline
        self.metrics = local.metrics
        self._token = token
        self.admin = StoreAdmin(local)
        self.console = ConsoleApi(local.service)
        self.reader = ReaderApi(local.service)
        self._ids = RequestIds()

    @property
    def status(self) -> SourceStatus:
        """What the local source did so far (``/v1/status``)."""
        assert self.local.source is not None, "serve always watches logs"
        return self.local.source.status

    async def ready(self) -> bool:
        return self.local.ready

    def _readiness_notes(self) -> dict[str, str]:
        source = self.local.source
        if source is None:
            return {}
        notes: dict[str, str] = {}
        if source.status.store_error is not None:
            notes["store_error"] = source.status.store_error
        if source.status.writer is not None:
            notes["writer"] = source.status.writer
        return notes

    # ---- HTTP ---------------------------------------------------------------------------------
    def app(self, allowed_hosts: frozenset[str] = LOOPBACK) -> ASGIApp:
        """The HTTP API behind the port's one guard (``worker.webguard.admit``): with a
        token, the token; without, only requests naming ``allowed_hosts``."""
        page, assets = console_routes()
        routes = Routes(
            {
                **ops_routes(self.metrics, self.ready, self._readiness_notes),
                **self.admin.routes(token_required=self._token is not None),
                ("POST", "/v1/call"): self._call_view,
                ("GET", "/v1/manifest"): self._manifest_view,
                ("GET", "/v1/status"): self._status_view,
                **self.console.routes(),
                **self.reader.routes(),
                **page,
            },
            assets,
        )
        admission = Admission(self._token, allowed_hosts, _is_open, frozenset({"/"}))
        return Guarded(routes, admission, MAX_BODY_BYTES)

    async def _call_view(self, request: Request) -> Response:
        received_ms = time.time() * 1000
        return await self.call(await request.body(), received_ms)

    async def call(self, body: bytes, received_ms: float) -> Response:
        """``POST /v1/call``: its body to the reply."""
        try:
            obj = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            return error_reply(400, "BAD_REQUEST", f"body is not JSON: {exc}")
        obj, extensions = ext.take_extensions(obj)
        try:
            call = HttpCall.model_validate(obj)
        except ValidationError as exc:
            return error_reply(400, "BAD_REQUEST", first_validation_error(exc))
        try:
            if extensions.error is not None:
                raise ext.ExtensionError(extensions.error)
            if extensions.source_agents is not None:
                ext.require_search(call.tool)
        except ext.ExtensionError as exc:
            return error_reply(400, "BAD_REQUEST", str(exc))
        unknown = lookup(call.tool)
        if isinstance(unknown, UnknownToolError):
            return error_reply(404, "UNKNOWN_TOOL", unknown.message)
        request_id = call.id or self._ids.new()
        failure = self.local.store_failure()
        if failure is not None:
            return _reply(encode_reply(request_id, ToolReply(error=failure)))
        tool_call = ToolCall.from_request(
            call,
            sent_ms=received_ms,
            request_id=request_id,
            source_agents=extensions.source_agents,
        )
        result = await self.pipeline.answer(tool_call)
        return _reply(encode_reply(request_id, result))

    async def start(
        self, listen: str | socket.socket, allowed_hosts: frozenset[str] = LOOPBACK
    ) -> tuple[HttpServer, int]:
        """Serve the API on ``listen`` (a socket bound already, as ``serve`` binds it,
        or ``HOST:PORT``), guarded for ``allowed_hosts``; the server and the port."""
        if isinstance(listen, str):
            host, port = parse_listen(listen)
            family = socket.AF_INET6 if ":" in host else socket.AF_INET
            listen = socket.create_server((host, port), family=family)
        server = await HttpServer.start(self.app(allowed_hosts), listen)
        return server, server.port

    async def _manifest_view(self, _: Request) -> Response:
        return json_reply(manifest(self.pipeline.limits))

    async def _status_view(self, _: Request) -> Response:
        """The writer's state and the store's counts; a store that cannot be read is a
        ``store_error`` with null counts, never a failed request."""
        s = self.status
        unreadable: str | None = None
        try:
            stats: StoreStats | None = await asyncio.to_thread(store_stats, self.data)
        except (sqlite3.Error, OSError) as exc:
            stats, unreadable = None, describe(exc)
        now = time.time()
        return json_reply(
            {
                "ready": self.local.ready,
                "pid": os.getpid(),
                "part": s.part,
                "writer": s.writer,
                "waiting_since": s.waiting_since,
                "queued": None
                if s.queued is None
                else {"pids": list(s.queued.pids), "stalled": s.queued.stalled},
                "watching": s.watching,
                "store_error": s.store_error or unreadable,
                "sessions": None if stats is None else stats.sessions,
                "events": None if stats is None else stats.events,
                "documents": None if stats is None else stats.documents,
                "workspaces": None if stats is None else stats.workspaces,
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


def _reply(body: bytes) -> Response:
    return Response(body, media_type=REPLY_TYPE)
