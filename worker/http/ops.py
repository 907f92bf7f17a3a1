"""HTTP endpoints every role serves: ``/metrics`` (Prometheus), ``/healthz`` (the process
answers) and ``/readyz`` (the role's own readiness). The only module that starts an
aiohttp server."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST

from indexer.metrics import Metrics
from worker.http.front import CallDoor

Readiness = Callable[[], Awaitable[bool]]
SHUTDOWN_S = 60.0  # how long a stopping server waits for the calls in flight (aiohttp's default)


def parse_listen(value: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:8080`` for IPv6); a clear ValueError names what is wrong."""
    host, sep, port = value.rpartition(":")
    if not sep or not host:
        raise ValueError(f"listen address must be HOST:PORT, got {value!r}")
    try:
        number = int(port)
    except ValueError:
        raise ValueError(f"listen port must be a number, got {port!r}") from None
    if not 0 <= number <= 65535:
        raise ValueError(f"listen port must be 0..65535, got {number}")
    return host.strip("[]"), number


def ops_routes(
    metrics: Metrics, ready: Readiness, notes: Callable[[], dict[str, str]] | None = None
) -> list[web.RouteDef]:
    """``notes`` adds fields to the ``/readyz`` body (e.g. a security warning)."""

    async def metrics_view(_: web.Request) -> web.Response:
        return web.Response(body=metrics.render(), headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def healthz(_: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def readyz(_: web.Request) -> web.Response:
        ok = await ready()
        metrics.ready.set(1 if ok else 0)
        body: dict[str, object] = {"ready": ok, **(notes() if notes is not None else {})}
        return web.json_response(body, status=200 if ok else 503)

    return [
        web.get("/metrics", metrics_view),
        web.get("/healthz", healthz),
        web.get("/readyz", readyz),
    ]


async def serve_on(
    app: web.Application, sock: socket.socket, door: CallDoor | None = None
) -> web.AppRunner:
    """Start serving ``app`` on a socket bound already (``worker.cli.door``); with
    ``door``, its connections meet the door first (``worker.http.front``)."""
    if door is None:
        runner = web.AppRunner(app, access_log=None)
    else:  # one idle bound for the connections of both
        runner = web.AppRunner(app, access_log=None, keepalive_timeout=door.idle_s)
    await runner.setup()
    await (web.SockSite(runner, sock) if door is None else _DoorSite(runner, sock, door)).start()
    return runner


class _DoorSite(web.SockSite):
    """``SockSite`` whose connections meet ``door`` first; stopping it closes the door's
    connections too, after their calls in flight replied."""

    def __init__(self, runner: web.AppRunner, sock: socket.socket, door: CallDoor) -> None:
        super().__init__(runner, sock)
        self._door = door

    async def start(self) -> None:
        await super(web.SockSite, self).start()  # BaseSite: registers the site
        server = self._runner.server
        assert server is not None
        self._server = await asyncio.get_running_loop().create_server(
            self._door.bind(server), sock=self._sock, backlog=self._backlog
        )

    async def stop(self) -> None:
        await super().stop()
        await self._door.close(SHUTDOWN_S)
