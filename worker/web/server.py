"""The one HTTP server of every port: uvicorn on a socket bound already (at the door,
``worker.cli.door``), serving an ASGI app behind ``worker.web.asgi.Guarded``.

uvicorn parses HTTP with httptools (llhttp, in C; ``worker.web.heads.BoundedHeads``);
the loop is the process's own (uvloop in the long-running roles). Its main loop is not
run: it only wakes ten times a second to refresh a ``Date`` header and poll for exit,
and an idle server here costs nothing — so replies carry no ``Date`` (optional for a
server without a reliable clock, RFC 9110 §6.6.1) and no ``Server`` banner.

Bounds: at most ``MAX_CONNECTIONS`` connections (503 beyond), a request head of at
most ``MAX_HEAD_BYTES`` arriving within ``HEAD_TIMEOUT_S`` (``worker.web.heads``), a
connection idle for ``IDLE_S`` between requests closed. Stopping closes the listener,
lets the app's lifespan end (the MCP SDK ends its sessions, so their event streams
close), then waits at most ``GRACEFUL_S`` for the requests in flight.
"""

from __future__ import annotations

import socket
from typing import Final

import uvicorn
from starlette.types import ASGIApp

from worker.web.heads import BoundedHeads

IDLE_S: Final = 75
GRACEFUL_S: Final = 2
"""Well within a role's stop bound (``worker.cli.runtime.STOP_GRACE_S``)."""
MAX_CONNECTIONS: Final = 1024


class _Server(uvicorn.Server):
    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        """The lifespan first, listener closed: uvicorn's own shutdown then finds the
        event streams of the app's sessions ended (its second lifespan shutdown returns
        at once)."""
        for server in self.servers:
            server.close()
        await self.lifespan.shutdown()
        await super().shutdown(sockets)


class HttpServer:
    """``app`` served on ``sock`` until ``close``."""

    def __init__(self, server: _Server, sock: socket.socket) -> None:
        self._server = server
        self._sock = sock
        self.port = int(sock.getsockname()[1])

    @classmethod
    async def start(
        cls, app: ASGIApp, sock: socket.socket, *, lifespan: bool = False
    ) -> HttpServer:
        """Start serving; ``lifespan``: the app has one to run (the MCP SDK's)."""
        config = uvicorn.Config(
            app,
            http=BoundedHeads,
            loop="none",
            lifespan="on" if lifespan else "off",
            log_config=None,
            log_level="warning",
            access_log=False,
            timeout_keep_alive=IDLE_S,
            timeout_graceful_shutdown=GRACEFUL_S,
            limit_concurrency=MAX_CONNECTIONS,
            date_header=False,
            server_header=False,
            proxy_headers=False,  # no client may rewrite its own address or scheme
            ws="none",  # no port speaks WebSocket: an upgrade is answered as plain HTTP
        )
        config.load()
        server = _Server(config)
        server.lifespan = config.lifespan_class(config)
        try:
            await server.startup(sockets=[sock])
        except SystemExit:  # uvicorn's answer to a lifespan that failed to start
            server.should_exit = True
        if server.should_exit:
            raise OSError(f"cannot serve HTTP on port {sock.getsockname()[1]}")
        server.server_state.default_headers = list(config.encoded_headers)
        return cls(server, sock)

    async def close(self) -> None:
        """Stop (module docstring); idempotent."""
        if self._server.started:
            self._server.started = False
            await self._server.shutdown(sockets=[self._sock])
