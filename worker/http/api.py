"""The HTTP API of ``sessionq serve``: tool calls, the manifest, status, the console's
reads (``worker.http.console_api``) and page (``worker.http.console_page``), the ops
probes and the admin endpoint.

Tool calls arrive over HTTP and run through the same ``Pipeline`` as the Kafka worker
(``worker.local_service``); the watched logs are applied by the local source
(``indexer.sources.local``), whose status ``/v1/status`` and ``/readyz`` show. A
transport only turns bytes into a call and a reply back into bytes.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import socket
import sqlite3
import time
from collections.abc import Awaitable, Callable

import orjson
from aiohttp import web
from aiohttp.typedefs import Middleware
from pydantic import ValidationError

from indexer.sources.local import SourceStatus
from indexer.stats import StoreStats, store_stats
from indexer.store.failure import describe
from worker.contract.envelopes import (
    MAX_REQUEST_BYTES,
    HttpCall,
    encode_reply,
    first_validation_error,
)
from worker.contract.errors import is_unknown_tool
from worker.contract.ids import RequestIds
from worker.contract.outcome import ToolReply
from worker.http.admin import StoreAdmin
from worker.http.console_api import ConsoleApi
from worker.http.console_page import console_routes, is_asset_path
from worker.http.front import IDLE_S, CallDoor, Headers
from worker.http.ops import ops_routes, parse_listen, serve_on
from worker.local_service import LocalService
from worker.manifest import manifest
from worker.pipeline import ToolCall
from worker.tools import source_agents as ext
from worker.webguard.origin import allowed_names, rebinding_guard, refusal
from worker.webguard.token import OPEN_PATHS, bearer, token_matches

MAX_BODY_BYTES = MAX_REQUEST_BYTES  # the same bound as a Kafka request record
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
LOOPBACK = allowed_names("127.0.0.1")


def _error_reply(status: int, code: str, message: str) -> tuple[int, bytes, str]:
    """An API error as (status, body, content type): the JSON ``web.json_response``
    wrote for it (``json.dumps``, UTF-8)."""
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    return status, body, "application/json; charset=utf-8"


def _response(status: int, body: bytes, content_type: str) -> web.Response:
    return web.Response(body=body, status=status, headers={"Content-Type": content_type})


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
    def app(self, allowed_hosts: frozenset[str] = LOOPBACK) -> web.Application:
        """The HTTP API; without a token, only for requests naming ``allowed_hosts``
        (``worker.webguard.origin``: the DNS-rebinding rule)."""
        guards: list[Middleware] = [self._guard]
        if self._token is None:
            guards.insert(0, rebinding_guard(allowed_hosts))
        app = web.Application(client_max_size=MAX_BODY_BYTES, middlewares=guards)
        app.add_routes(ops_routes(self.metrics, self.ready, self._readiness_notes))
        app.add_routes(self.admin.routes(token_required=self._token is not None))
        app.add_routes(
            [
                web.post("/v1/call", self._call_view),
                web.get("/v1/manifest", self._manifest_view),
                web.get("/v1/status", self._status_view),
                *self.console.routes(),
                *console_routes(),
            ]
        )
        return app

    @staticmethod
    def _bad(status: int, code: str, message: str) -> web.Response:
        return _response(*_error_reply(status, code, message))

    def _authorized(self, request: web.Request) -> bool:
        """With a token: every path but the probes and the console's static files needs
        ``Authorization: Bearer``; the console page ``/`` also takes ``?token=`` (a
        browser cannot send the header when the page is opened; the page moves it into
        sessionStorage and off the URL)."""
        token = self._token
        if token is None or request.path in OPEN_PATHS or is_asset_path(request.path):
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
        return _response(*await self.call(await request.read(), received_ms))

    async def call(self, body: bytes, received_ms: float) -> tuple[int, bytes, str]:
        """``POST /v1/call`` from its body to (status, reply body, content type), for
        aiohttp's route and for ``worker.http.front`` alike."""
        try:
            obj = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            return _error_reply(400, "BAD_REQUEST", f"body is not JSON: {exc}")
        obj, extensions = ext.take_extensions(obj)
        try:
            call = HttpCall.model_validate(obj)
        except ValidationError as exc:
            return _error_reply(400, "BAD_REQUEST", first_validation_error(exc))
        request_id = call.id or self._ids.new()
        failure = self.local.store_failure()
        if failure is not None:
            return 200, encode_reply(request_id, ToolReply(error=failure)), "application/json"
        tool_call = ToolCall.from_request(call, sent_ms=received_ms, request_id=request_id)
        try:
            arguments = await ext.restrict_request(
                self.service, call.tool, call.arguments, tool_call.caller, extensions
            )
        except ext.ExtensionError as exc:
            return _error_reply(400, "BAD_REQUEST", str(exc))
        if arguments is not call.arguments:
            tool_call = dataclasses.replace(tool_call, arguments=arguments)
        result = await self.pipeline.answer(tool_call)
        error = result.error
        if error is not None and is_unknown_tool(error.code, error.message):
            return _error_reply(404, "UNKNOWN_TOOL", error.message)  # the pipeline's one answer
        return 200, encode_reply(request_id, result), "application/json"

    async def start(
        self,
        listen: str | socket.socket,
        allowed_hosts: frozenset[str] = LOOPBACK,
        *,
        idle_s: float = IDLE_S,
    ) -> tuple[web.AppRunner, int]:
        """Serve the API on ``listen`` (a socket bound already, as ``serve`` binds it,
        or ``HOST:PORT``), tool calls through its door, both guarded for
        ``allowed_hosts``, idle connections closed after ``idle_s``; the runner and the
        port."""
        if isinstance(listen, str):
            host, port = parse_listen(listen)
            family = socket.AF_INET6 if ":" in host else socket.AF_INET
            listen = socket.create_server((host, port), family=family)
        door = self.door(allowed_hosts, idle_s=idle_s)
        runner = await serve_on(self.app(allowed_hosts), listen, door)
        return runner, int(listen.getsockname()[1])

    def door(self, allowed_hosts: frozenset[str], *, idle_s: float = IDLE_S) -> CallDoor:
        """The socket's protocol factory: tool calls answered by ``call`` directly, when
        the guards of ``app(allowed_hosts)`` admit them (``worker.http.front``)."""

        def admits(fields: Headers) -> bool:
            if self._token is None:
                return refusal(fields.get("host"), fields.get("origin"), allowed_hosts) is None
            return token_matches(bearer(fields.get("authorization")), self._token)

        return CallDoor(self.call, admits, MAX_BODY_BYTES, idle_s=idle_s)

    async def _manifest_view(self, _: web.Request) -> web.Response:
        return web.json_response(manifest(self.pipeline.limits))

    async def _status_view(self, _: web.Request) -> web.Response:
        """The writer's state and the store's counts; a store that cannot be read is a
        ``store_error`` with null counts, never a failed request."""
        s = self.status
        unreadable: str | None = None
        try:
            stats: StoreStats | None = await asyncio.to_thread(store_stats, self.data)
        except (sqlite3.Error, OSError) as exc:
            stats, unreadable = None, describe(exc)
        now = time.time()
        return web.json_response(
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
