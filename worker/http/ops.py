"""HTTP endpoints every role serves: ``/metrics`` (Prometheus), ``/healthz`` (the process
answers) and ``/readyz`` (the role's own readiness). The only module that starts an
aiohttp server."""

from __future__ import annotations

import socket
from collections.abc import Awaitable, Callable

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST

from indexer.metrics import Metrics

Readiness = Callable[[], Awaitable[bool]]


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


async def serve_on(app: web.Application, sock: socket.socket) -> web.AppRunner:
    """Start serving ``app`` on a socket bound already (``worker.cli.door``)."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.SockSite(runner, sock).start()
    return runner


async def start_server(app: web.Application, listen: str) -> tuple[web.AppRunner, int]:
    """Start serving ``app``; returns the runner and the bound port (``:0`` picks one)."""
    host, port = parse_listen(listen)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    bound = port
    for address in runner.addresses:
        bound = int(address[1])
        break
    return runner, bound
