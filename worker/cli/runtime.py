"""What a long-running role needs around its main loop: logging, the ops endpoints,
graceful termination, and (workers in a replica) waiting for the local index."""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

from aiohttp import web

from indexer.metrics import Metrics
from indexer.settings import ServiceSettings
from worker.cli.logs import configure_logging
from worker.http.ops import Readiness, ops_routes, start_server


def setup_logging(settings: ServiceSettings) -> None:
    kafka = getattr(settings, "kafka", None)
    configure_logging(
        settings.log_format, settings.log_level, kafka.bootstrap if kafka is not None else None
    )


async def serve_ops(
    listen: str,
    metrics: Metrics,
    ready: Readiness,
    notes: Callable[[], dict[str, str]] | None = None,
) -> web.AppRunner | None:
    """Start ``/metrics``, ``/healthz``, ``/readyz`` when a listen address is configured."""
    if not listen:
        return None
    app = web.Application()
    app.add_routes(ops_routes(metrics, ready, notes))
    runner, port = await start_server(app, listen)
    print(f"metrics on {listen.rpartition(':')[0]}:{port}", file=sys.stderr)
    return runner


def on_terminate(stop: Callable[[], Awaitable[None]]) -> None:
    """SIGTERM/SIGINT ask the role to stop: in-flight work finishes, offsets commit, the
    consumer leaves its group."""
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, lambda: asyncio.ensure_future(stop()))


async def wait_for_index(data: Path) -> None:
    """Block until this data dir's indexer has caught up once (a replica joins the worker
    group only with a complete index)."""
    from indexer.store.data_dir import sqlite_path
    from indexer.store.sqlite_tables import connect, indexer_caught_up

    print("waiting for the indexer to catch up...", file=sys.stderr, flush=True)
    while True:
        if sqlite_path(data).exists():
            conn = connect(sqlite_path(data), readonly=True)
            try:
                if indexer_caught_up(conn):
                    return
            finally:
                conn.close()
        await asyncio.sleep(0.5)
