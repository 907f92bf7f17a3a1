"""``sessionq mcp``: the five tools as an MCP server (``worker.transports.mcp``), stdio or
Streamable HTTP, over the embedded store or Kafka. stdout belongs to the protocol on
stdio: everything else (logs, the HTTP URL) goes to stderr.

A stdio server over a data dir is an agent window's: this process is then only its thin
front (``worker.cli.mcp_front``), relaying to the daemon that serves every window of the
data dir (``worker.cli.mcp_daemon``). Any other runs here. Module-level imports stay
light: the front must not load the settings models, the SDK or the store.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from worker.cli.exits import EXIT_OK, EXIT_USAGE, fail

if TYPE_CHECKING:
    import socket

    from worker.settings import McpSettings
    from worker.transports.mcp.window import Window


@dataclass(frozen=True)
class Prepared:
    """A server's settings after the checks at the door."""

    settings: McpSettings
    roots: list[Path]
    address: tuple[str, int, str | None] | None  # HTTP: host, port, bearer token
    sock: socket.socket | None  # HTTP: the bound listening socket


def _http_token(settings: McpSettings) -> tuple[str, int, str | None]:
    """Host, port and bearer token, checked before anything starts (exit 2 naming the
    flag; the token's text is never printed)."""
    from worker.transports.http.ops import parse_listen
    from worker.transports.mcp.http import check_listen
    from worker.webguard.token import TokenFileError, load_token

    try:
        host, port = parse_listen(settings.listen)
    except ValueError as exc:
        fail("mcp", f"--listen / SESSIONQ_LISTEN: {exc}")
    token = None
    if settings.token_file is not None:
        try:
            token = load_token(settings.token_file)
        except TokenFileError as exc:
            fail("mcp", f"--token-file / SESSIONQ_TOKEN_FILE: {exc}")
    problem = check_listen(host, token)
    if problem is not None:
        fail("mcp", f"--listen {settings.listen} {problem} (or listen on 127.0.0.1)")
    return host, port, token


def prepare(args: argparse.Namespace) -> Prepared | None:
    """Settings -> the checks at the door (session paths, data dir, the HTTP port bound
    now) -> logging; None when the data dir holds no store to read (said on stderr)."""
    from worker.cli import door
    from worker.cli.logs import configure_logging
    from worker.cli.options import data_exists, settings_from
    from worker.settings import McpSettings

    settings = settings_from(McpSettings, args)
    roots = door.session_roots("mcp", settings.sessions or [])
    address = _http_token(settings) if settings.transport == "http" else None
    sock = door.listening_socket("mcp", address[0], address[1]) if address else None
    # Without --sessions the data dir is read, never created.
    if settings.data is not None and not settings.sessions:
        if not data_exists("mcp", settings.data):
            return None
    elif settings.data is not None:
        door.data_dir("mcp", settings.data)
    kafka = settings.kafka
    configure_logging(
        settings.log_format, settings.log_level, kafka.bootstrap if kafka is not None else None
    )
    return Prepared(settings, roots, address, sock)


def backend_for(prepared: Prepared) -> Any:
    """The backend of the settings: Kafka, else the data dir (watching the roots)."""
    from indexer.logs.watch import WatchRoot
    from worker.transports.mcp.backends import EmbeddedBackend, KafkaBackend

    settings = prepared.settings
    if settings.kafka is not None:
        signer = None
        if settings.signing_key is not None:
            from worker.authn.tokens import CallerSigner

            assert settings.key_id is not None
            signer = CallerSigner.from_file(settings.key_id, settings.signing_key)
        return KafkaBackend(settings.kafka, settings.tools, signer=signer, data=settings.data)
    assert settings.data is not None
    fmt = None if settings.format == "auto" else settings.format
    return EmbeddedBackend(
        settings.data,
        [WatchRoot(r, fmt) for r in prepared.roots],
        settings.tools,
        force_polling=settings.watch == "poll",
        redaction=settings.redaction,
    )


def this_window(caller: str | None) -> Window:
    """The agent window this process serves itself (stdio or HTTP here)."""
    from worker.transports.mcp.window import Window, session_hints

    hints = session_hints(os.environ)
    label = f"sessionq mcp (pid {os.getpid()})"
    return Window(os.getcwd(), caller, hints, int(time.time() * 1000), label)


def cmd_mcp(args: argparse.Namespace) -> int:
    """A window's front when it serves stdio over a data dir (module docstring), else
    the server in this process."""
    from worker.cli.mcp_front import daemon_target, run_front

    data = daemon_target(args, os.environ)
    if data is not None:
        return run_front(args, data)
    return serve_here(args)


def serve_here(args: argparse.Namespace) -> int:
    """Order: ``prepare`` -> the backend (its local source writes or stands by) -> the
    transport until the client goes away or SIGTERM/SIGINT."""
    from worker.cli.runtime import run_until_stopped
    from worker.transports.mcp.binding import CallerBinder
    from worker.transports.mcp.server import build_server

    prepared = prepare(args)
    if prepared is None:
        return EXIT_USAGE
    settings, address, sock = prepared.settings, prepared.address, prepared.sock
    backend = backend_for(prepared)
    binder = CallerBinder(workspace=settings.workspace)
    server = build_server(backend, binder, this_window(settings.caller))

    async def serve() -> None:
        if address is None or sock is None:
            from mcp.server.stdio import stdio_server

            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())
        else:
            from worker.transports.mcp.http import http_app, serve_http
            from worker.webguard.origin import allowed_names

            host, _, token = address
            names = allowed_names(host, settings.allowed_hosts)
            await serve_http(http_app(server, names, token), host, sock)

    async def main(stopping: asyncio.Event) -> None:
        await backend.start()
        try:
            serving = asyncio.ensure_future(serve())
            stop = asyncio.ensure_future(stopping.wait())
            await asyncio.wait({serving, stop}, return_when=asyncio.FIRST_COMPLETED)
            for task in (serving, stop):
                task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await serving
        finally:
            await backend.stop()

    return run_until_stopped(main, "mcp", settings.event_loop) or EXIT_OK
