"""HTTP endpoints every role serves: ``/metrics`` (Prometheus), ``/healthz`` (the process
answers) and ``/readyz`` (the role's own readiness)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from prometheus_client import CONTENT_TYPE_LATEST
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp

from indexer.metrics import Metrics
from worker.contract.envelopes import MAX_REQUEST_BYTES
from worker.web.asgi import Guarded, Handler, Routes, json_reply
from worker.webguard.admit import OPEN_PORT

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
) -> dict[tuple[str, str], Handler]:
    """``notes`` adds fields to the ``/readyz`` body (e.g. a security warning)."""

    async def metrics_view(_: Request) -> Response:
        return Response(metrics.render(), headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def healthz(_: Request) -> Response:
        return json_reply({"status": "ok"})

    async def readyz(_: Request) -> Response:
        ok = await ready()
        metrics.ready.set(1 if ok else 0)
        body: dict[str, object] = {"ready": ok, **(notes() if notes is not None else {})}
        return json_reply(body, status=200 if ok else 503)

    return {
        ("GET", "/metrics"): metrics_view,
        ("GET", "/healthz"): healthz,
        ("GET", "/readyz"): readyz,
    }


def ops_app(
    metrics: Metrics, ready: Readiness, notes: Callable[[], dict[str, str]] | None = None
) -> ASGIApp:
    """A role's ops port: the three endpoints, open to whoever reaches the port
    (``worker.webguard.admit.OPEN_PORT``), bodies bounded as everywhere."""
    return Guarded(Routes(ops_routes(metrics, ready, notes)), OPEN_PORT, MAX_REQUEST_BYTES)
