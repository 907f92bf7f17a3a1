"""Streamable HTTP for ``sessionq mcp --transport http``: the SDK's app behind the
network rule of ``sessionq serve`` (``worker.http.auth``): loopback by default; beyond
loopback only with a bearer token (``--token-file``), which every request must then
present (``Authorization: Bearer``); a missing or wrong token is a JSON 401.
"""

from __future__ import annotations

import socket
import sys
from typing import Any

import orjson
from mcp.server import Server
from starlette.types import ASGIApp, Receive, Scope, Send

from worker.http.auth import bearer, is_loopback, token_matches

MCP_PATH = "/mcp"


class BearerGuard:
    """ASGI middleware: with a token, every HTTP request must carry it."""

    def __init__(self, app: ASGIApp, token: str | None) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.token is None:
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if token_matches(bearer(headers.get("authorization")), self.token):
            await self.app(scope, receive, send)
            return
        body = orjson.dumps(
            {"error": {"code": "UNAUTHENTICATED", "message": "a valid bearer token is required"}}
        )
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"www-authenticate", b"Bearer"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def http_app(server: Server[Any], host: str, token: str | None) -> ASGIApp:
    """The SDK's Streamable HTTP app (DNS-rebinding protection on loopback) behind
    ``BearerGuard``."""
    app = server.streamable_http_app(streamable_http_path=MCP_PATH, host=host)
    return BearerGuard(app, token)


async def serve_http(app: ASGIApp, host: str, port: int) -> None:
    """Bind first (port 0 picks a free one), print the URL on stderr, then serve until
    cancelled or signalled."""
    import uvicorn

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.create_server((host, port), family=family)
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    print(f"sessionq mcp on http://{shown}:{bound}{MCP_PATH}", file=sys.stderr, flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="on", access_log=False)
    await uvicorn.Server(config).serve(sockets=[sock])


def check_listen(host: str, token: str | None) -> str | None:
    """Why ``host`` may not be listened on without a token (None: it may)."""
    if token is None and not is_loopback(host):
        return "is not a loopback address: give --token-file / SESSIONQ_TOKEN_FILE"
    return None
