"""Streamable HTTP for ``sessionq mcp --transport http``: the SDK's app behind the one
guard of every sessionq port (``worker.web.asgi.Guarded``, ``worker.webguard.admit``):
loopback by default, where a request must name an allowed host (DNS-rebinding rule:
421/403); beyond loopback only with a bearer token (``--token-file``), which every
request must then present (``Authorization: Bearer``; a JSON 401 before the body is
read). A body over ``MAX_REQUEST_BYTES`` (1 MiB, as ``serve`` and a Kafka request
record) is a JSON 413 without being buffered whole. Served by the one HTTP server
(``worker.web.server``).
"""

from __future__ import annotations

import asyncio
import socket
import sys
from typing import Any

from mcp.server import Server
from starlette.types import ASGIApp

from worker.contract.envelopes import MAX_REQUEST_BYTES
from worker.web.asgi import Guarded
from worker.web.server import HttpServer
from worker.webguard.admit import Admission
from worker.webguard.token import is_loopback

MCP_PATH = "/mcp"


def http_app(server: Server[Any], names: frozenset[str], token: str | None) -> ASGIApp:
    """The SDK's Streamable HTTP app behind the port's guard, which applies the one
    DNS-rebinding rule (``worker.webguard.origin``, with ``names``) in place of the SDK's."""
    from mcp.server.transport_security import TransportSecuritySettings

    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    return Guarded(app, Admission(token, names), MAX_REQUEST_BYTES)


async def serve_http(app: ASGIApp, host: str, sock: socket.socket) -> None:
    """Serve on ``sock`` (bound at the door, ``worker.cli.door``): print the URL on
    stderr, then serve until cancelled.

    Cancelling it is how the role stops it (its SIGTERM/SIGINT handlers,
    ``worker.cli.runtime.run_until_stopped``): the server then shuts down in order
    (``HttpServer.close``) before the cancellation goes on, so no task of the app is
    left to be cancelled mid-wait."""
    server = await HttpServer.start(app, sock, lifespan=True)
    shown = f"[{host}]" if ":" in host else host
    print(f"sessionq mcp on http://{shown}:{server.port}{MCP_PATH}", file=sys.stderr, flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await asyncio.shield(server.close())


def check_listen(host: str, token: str | None) -> str | None:
    """Why ``host`` may not be listened on without a token (None: it may)."""
    if token is None and not is_loopback(host):
        return "is not a loopback address: give --token-file / SESSIONQ_TOKEN_FILE"
    return None
