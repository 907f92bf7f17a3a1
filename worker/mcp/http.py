"""Streamable HTTP for ``sessionq mcp --transport http``: the SDK's app behind the
network rules of ``sessionq serve`` (``worker.webguard.token``, ``worker.webguard.origin``):
loopback by default, where a request must name an allowed host (DNS-rebinding rule:
421/403); beyond loopback only with a bearer token (``--token-file``), which every
request must then present (``Authorization: Bearer``); a missing or wrong token is a
JSON 401 (before the body is read). A body over ``MAX_REQUEST_BYTES`` (1 MiB, as
``serve`` and a Kafka request record) is a JSON 413 without being buffered whole.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import sys
from collections.abc import Iterator
from typing import Any

import orjson
from mcp.server import Server
from starlette.types import ASGIApp, Receive, Scope, Send

from worker.contract.envelopes import MAX_REQUEST_BYTES
from worker.webguard.origin import refusal
from worker.webguard.token import bearer, is_loopback, token_matches

MCP_PATH = "/mcp"


async def _json_error(send: Send, status: int, code: str, message: str, *extra: Any) -> None:
    body = orjson.dumps({"error": {"code": code, "message": message}})
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *extra,
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class BearerGuard:
    """ASGI middleware: with a token, every HTTP request must carry it; every body is
    bounded (module docstring)."""

    def __init__(self, app: ASGIApp, token: str | None, names: frozenset[str]) -> None:
        self.app = app
        self.token = token
        self.names = names

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        refused = (
            refusal(headers.get("host"), headers.get("origin"), self.names)
            if self.token is None
            else None
        )
        if refused is not None:
            await _json_error(send, refused[0], "FORBIDDEN_HOST", refused[1])
            return
        if self.token is not None and not token_matches(
            bearer(headers.get("authorization")), self.token
        ):
            await _json_error(
                send,
                401,
                "UNAUTHENTICATED",
                "a valid bearer token is required",
                (b"www-authenticate", b"Bearer"),
            )
            return
        body = await _bounded_body(headers, receive)
        if body is None:
            await _json_error(
                send, 413, "PAYLOAD_TOO_LARGE", f"request body exceeds {MAX_REQUEST_BYTES} bytes"
            )
            return
        await self.app(scope, _replay(body, receive), send)


async def _bounded_body(headers: dict[str, str], receive: Receive) -> bytes | None:
    """The whole body, or None as soon as it is known to exceed the bound."""
    declared = headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_REQUEST_BYTES:
        return None
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_REQUEST_BYTES:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives the buffered body once, then the client's own messages
    (e.g. ``http.disconnect``)."""
    sent = False

    async def replay() -> Any:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def http_app(server: Server[Any], names: frozenset[str], token: str | None) -> ASGIApp:
    """The SDK's Streamable HTTP app behind ``BearerGuard``, which applies the one
    DNS-rebinding rule (``worker.webguard.origin``, with ``names``) in place of the SDK's."""
    from mcp.server.transport_security import TransportSecuritySettings

    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    return BearerGuard(app, token, names)


# After a stop, how long open connections (a client's event stream) may take to end
# before uvicorn cancels them: well within the role's stop bound (``STOP_GRACE_S``).
GRACEFUL_S = 1


async def serve_http(app: ASGIApp, host: str, sock: socket.socket) -> None:
    """Serve on ``sock`` (bound at the door, ``worker.cli.door``): print the URL on
    stderr, then serve until cancelled.

    Cancelling it is how the role stops it (its SIGTERM/SIGINT handlers,
    ``worker.cli.runtime.run_until_stopped``; uvicorn installs none of its own): the
    server then shuts down in order — listener closed, connections ended within
    ``GRACEFUL_S``, the app's lifespan told to shut down and awaited — before the
    cancellation goes on, so no task of the app is left to be cancelled mid-wait."""
    import uvicorn

    class Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            """The app's lifespan first (listener closed): the SDK ends its sessions,
            so their event streams end and their connections close by themselves;
            uvicorn's own shutdown then finds nothing to cancel (its second lifespan
            shutdown returns at once)."""
            for server in self.servers:
                server.close()
            await self.lifespan.shutdown()
            await super().shutdown(sockets)

    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    print(f"sessionq mcp on http://{shown}:{bound}{MCP_PATH}", file=sys.stderr, flush=True)
    config = uvicorn.Config(
        app,
        log_level="warning",
        lifespan="on",
        access_log=False,
        timeout_graceful_shutdown=GRACEFUL_S,
    )
    server = Server(config)
    serving = asyncio.ensure_future(server.serve(sockets=[sock]))
    try:
        await asyncio.shield(serving)
    except asyncio.CancelledError:
        server.should_exit = True
        await serving
        raise


def check_listen(host: str, token: str | None) -> str | None:
    """Why ``host`` may not be listened on without a token (None: it may)."""
    if token is None and not is_loopback(host):
        return "is not a loopback address: give --token-file / SESSIONQ_TOKEN_FILE"
    return None
