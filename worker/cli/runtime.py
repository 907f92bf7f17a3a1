"""What a long-running role needs around its main loop: logging, the ops endpoints,
graceful termination, and (workers in a replica) waiting for the local index."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import sys
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any, Final, Literal, TypeVar

from indexer.metrics import Metrics
from indexer.settings import ServiceSettings
from worker.cli.logs import configure_logging
from worker.transports.http.ops import Readiness, ops_app
from worker.web.server import HttpServer


def setup_logging(settings: ServiceSettings) -> None:
    kafka = getattr(settings, "kafka", None)
    configure_logging(
        settings.log_format, settings.log_level, kafka.bootstrap if kafka is not None else None
    )


async def serve_ops(
    sock: socket.socket | None,
    metrics: Metrics,
    ready: Readiness,
    notes: Callable[[], dict[str, str]] | None = None,
) -> HttpServer | None:
    """Start ``/metrics``, ``/healthz``, ``/readyz`` on the role's ``--metrics-listen``
    socket, bound at the door (``worker.cli.door.metrics_socket``; None: disabled)."""
    if sock is None:
        return None
    server = await HttpServer.start(ops_app(metrics, ready, notes), sock)
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    print(f"metrics on {shown}:{port}", file=sys.stderr)
    return server


T = TypeVar("T")
EventLoop = Literal["uvloop", "asyncio"]


def loop_factory(name: EventLoop) -> Callable[[], asyncio.AbstractEventLoop]:
    """The one choice of event loop. uvloop runs the loop, the sockets and the timers in
    C (libuv), so each request costs less CPU (``bench/bench_cpu.py``). Where uvloop is
    not installed (it has no Windows build), the standard library's loop."""
    if name == "uvloop":
        try:
            import uvloop
        except ImportError:
            return asyncio.new_event_loop
        return uvloop.new_event_loop
    return asyncio.new_event_loop


def run_loop(main: Coroutine[Any, Any, T], event_loop: EventLoop) -> T:
    """``asyncio.run(main)`` on the chosen loop (``ServiceSettings.event_loop``)."""
    with asyncio.Runner(loop_factory=loop_factory(event_loop)) as runner:
        return runner.run(main)


STOP_GRACE_S: Final = 4.0  # after SIGTERM/SIGINT, the longest a role takes to stop


def run_until_stopped(
    main: Callable[[asyncio.Event], Awaitable[None]], command: str, event_loop: EventLoop
) -> int:
    """Run ``main(stopping)`` in a new event loop until it returns. SIGTERM and SIGINT
    set ``stopping``; a role that has not stopped ``STOP_GRACE_S`` later (a worker
    thread in the middle of a long read, a blocked stdin) is ended at once, as is one
    that gets a second signal: the data dir is crash-safe, so nothing is lost that a
    restart does not redo. Never a traceback; the exit status is 0."""

    def hard_exit(why: str) -> None:
        print(f"sessionq {command}: {why}; stopping now", file=sys.stderr, flush=True)
        logging.shutdown()
        os._exit(0)

    async def runner() -> None:
        stopping = asyncio.Event()
        loop = asyncio.get_running_loop()

        def on_signal() -> None:
            if stopping.is_set():
                hard_exit("a second signal")
            stopping.set()
            loop.call_later(STOP_GRACE_S, hard_exit, f"not stopped after {STOP_GRACE_S:.0f} s")

        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, on_signal)
        await main(stopping)

    try:
        run_loop(runner(), event_loop)
    except KeyboardInterrupt:  # a SIGINT before the handlers were installed
        return 0
    return 0


def on_terminate(stop: Callable[[], Awaitable[None]]) -> None:
    """SIGTERM/SIGINT ask the role to stop: in-flight work finishes, offsets commit, the
    consumer leaves its group."""
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, lambda: asyncio.ensure_future(stop()))


async def wait_for_index(data: Path) -> None:
    """Block until this data dir's indexer has caught up once (a replica joins the worker
    group only with a complete index)."""
    from indexer.store.layout import sqlite_path
    from indexer.store.tables.connection import connect
    from indexer.store.tables.sqlite_tables import indexer_caught_up

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
