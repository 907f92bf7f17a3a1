"""The HTTP application layer every port shares: one guard in front of every app
(``Guarded``: admission, then a bounded body), one route table (``Routes``), one JSON
writer (``json_reply``, ``error_reply``). Requests and responses are Starlette's; the
server is uvicorn's (``worker.web.server``).

Order of a request: admission (``worker.webguard.admit``; before the body is read) →
the body, read whole up to ``max_body`` (413 beyond it, without buffering it all; the
time it may take is the server's, ``worker.web.heads``) → the route → its handler. A
route added later cannot skip the guard: the guard wraps the table, not the routes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

from starlette.datastructures import QueryParams
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from worker.webguard.admit import Admission

__all__ = ["Guarded", "Handler", "Routes", "ascii_int", "error_reply", "json_reply"]

JSON_TYPE: Final = "application/json; charset=utf-8"
Handler = Callable[[Request], Awaitable[Response]]


_ASCII_INT: Final = re.compile(r"[0-9]{1,16}")


def ascii_int(text: str) -> int | None:
    """``text`` as a non-negative integer of 1 to 16 ASCII digits, else None
    (``str.isdigit`` takes ``²`` and ``٣``, which ``int`` then refuses or reads)."""
    return int(text) if _ASCII_INT.fullmatch(text) else None


def json_reply(obj: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> Response:
    """``obj`` as JSON (``json.dumps``: the API's bytes since its first release)."""
    body = json.dumps(obj).encode()
    return Response(body, status, headers=headers, media_type=JSON_TYPE)


def error_reply(
    status: int, code: str, message: str, headers: Mapping[str, str] | None = None
) -> Response:
    """The API's one error shape: ``{"error": {"code": …, "message": …}}``."""
    return json_reply({"error": {"code": code, "message": message}}, status, headers)


class Routes:
    """An ASGI app answering exact ``(method, path)`` routes, and ``prefixes`` whose
    handler takes every path under it. HEAD is answered as GET. Anything else is a JSON
    404 or 405."""

    def __init__(
        self,
        routes: Mapping[tuple[str, str], Handler],
        prefixes: Mapping[tuple[str, str], Handler] | None = None,
    ) -> None:
        self.routes = dict(routes)
        self.prefixes = dict(prefixes or {})
        self._methods: dict[str, set[str]] = {}
        for method, path in self.routes:
            self._methods.setdefault(path, set()).add(method)

    def _handler(self, method: str, path: str) -> Handler | Response:
        method = "GET" if method == "HEAD" else method
        handler = self.routes.get((method, path))
        if handler is not None:
            return handler
        for (m, prefix), h in self.prefixes.items():
            if path.startswith(prefix) and m == method:
                return h
        allowed = self._methods.get(path)
        if allowed:
            allow = ", ".join(sorted(allowed))
            return error_reply(
                405, "METHOD_NOT_ALLOWED", f"{path} answers {allow}", {"Allow": allow}
            )
        return error_reply(404, "NOT_FOUND", "nothing is served at this path")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # served without a lifespan (``HttpServer.start``)
            return
        found = self._handler(scope["method"], scope["path"])
        response = found if isinstance(found, Response) else await found(Request(scope, receive))
        await response(scope, receive, send)


class Guarded:
    """ASGI middleware in front of a port's app: the port's ``Admission`` first, then
    the body bounded by ``max_body`` (module docstring). Refusals use the one error
    writer; a refused request's body is never read."""

    def __init__(self, app: ASGIApp, admission: Admission, max_body: int) -> None:
        self.app = app
        self.admission = admission
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":  # the app's start and stop, not a request
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":  # no port speaks anything else (``ws="none"``)
            return
        headers = _guarded_headers(scope["headers"])
        if isinstance(headers, Response):
            await headers(scope, receive, send)
            return
        path: str = scope["path"]
        query = (
            QueryParams(scope["query_string"]).get("token")
            if path in self.admission.token_in_query
            else None
        )
        refused = self.admission.admit(path, headers, query)
        if refused is not None:
            extra = dict(refused.headers)
            await error_reply(refused.status, refused.code, refused.message, extra)(
                scope, receive, send
            )
            return
        try:
            body = await _bounded_body(headers, receive, self.max_body)
        except _Gone:  # the client went before its body ended: nobody to answer
            return
        if body is None:
            too_large = f"request body exceeds {self.max_body} bytes"
            await error_reply(413, "PAYLOAD_TOO_LARGE", too_large)(scope, receive, send)
            return
        await self.app(scope, _replay(body, receive), send)


_GUARDED: Final = {
    b"host": "host",
    b"origin": "origin",
    b"authorization": "authorization",
    b"content-length": "content-length",
}
"""The header fields the guard reads (ASGI names are lower case)."""


def _guarded_headers(raw: list[tuple[bytes, bytes]]) -> dict[str, str] | Response:
    """The guarded fields by name (non-UTF-8 bytes kept as surrogates), or a 400 when
    one is repeated: two ``Host`` or ``Authorization`` fields could be read differently
    by the guard and by whatever reads them later."""
    found: dict[str, str] = {}
    for key, value in raw:
        name = _GUARDED.get(key)
        if name is None:
            continue
        if name in found:
            return error_reply(400, "BAD_REQUEST", f"the request repeats its {name} header")
        found[name] = value.decode("utf-8", "surrogateescape")
    return found


class _Gone(Exception):
    """The connection ended before the request's body did."""


async def _bounded_body(headers: Mapping[str, str], receive: Receive, bound: int) -> bytes | None:
    """The whole body, or None as soon as it is known to exceed ``bound``; ``_Gone`` when
    the client disconnects first (a body cut short is never taken for a whole one). How
    long it may take is the server's bound (``worker.web.heads.BODY_TIMEOUT_S``)."""
    declared = ascii_int(headers.get("content-length", ""))
    if declared is not None and declared > bound:
        return None
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            raise _Gone
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > bound:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives the buffered body once, then the client's own messages
    (e.g. ``http.disconnect``)."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
