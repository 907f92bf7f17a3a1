"""``sessionq serve``: embedded mode in the foreground — the local source applies the
watched logs (``worker.local_service``), the HTTP API answers (``worker.transports.http.api``).

Order: settings -> the checks at the door (``worker.cli.door``: the session paths, the
data dir, the listen port bound now) -> the HTTP server on that socket -> the local
source (it writes the data dir, or stands by while another process does) -> the ready
line once this process's logs are in the store -> until SIGTERM/SIGINT.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from worker.cli.exits import EXIT_OK, fail
from worker.cli.options import settings_from
from worker.cli.runtime import run_until_stopped, setup_logging
from worker.settings import ServeSettings


def _token(settings: ServeSettings) -> str | None:
    """The bearer token, checked before binding: beyond loopback one is required; an
    unreadable or empty token file exits 2 (the message names the file, never the token)."""
    from worker.webguard.token import TokenFileError, is_loopback, load_token

    host = _address(settings)[0]
    if settings.token_file is None:
        if not is_loopback(host):
            fail(
                "serve",
                f"--listen {settings.listen} is not a loopback address: give --token-file /"
                " SESSIONQ_TOKEN_FILE (a file holding the bearer token) or listen on 127.0.0.1",
            )
        return None
    try:
        return load_token(settings.token_file)
    except TokenFileError as exc:
        fail("serve", f"--token-file / SESSIONQ_TOKEN_FILE: {exc}")


def _address(settings: ServeSettings) -> tuple[str, int]:
    from worker.transports.http.ops import parse_listen

    try:
        return parse_listen(settings.listen)
    except ValueError as exc:
        fail("serve", f"--listen / SESSIONQ_LISTEN: {exc}")


def cmd_serve(args: argparse.Namespace) -> int:
    from indexer.logs.watch import WatchRoot
    from worker.cli import door

    settings = settings_from(ServeSettings, args)
    token = _token(settings)
    roots = door.session_roots("serve", settings.sessions)
    host, port = _address(settings)
    sock = door.listening_socket("serve", host, port)
    data = door.data_dir("serve", settings.data)
    setup_logging(settings)
    fmt = None if settings.format == "auto" else settings.format

    async def main(stopping: asyncio.Event) -> None:
        from worker.local_service import LocalService
        from worker.transports.http.api import HttpApi
        from worker.webguard.origin import allowed_names

        local = LocalService(
            data,
            [WatchRoot(r, fmt) for r in roots],
            role="serve",
            limits=settings.tools,
            retain_days=settings.retain_days,
            retention_check_s=settings.retention_check_ms / 1000,
            force_polling=settings.watch == "poll",
            redaction=settings.redaction,
        )
        names = allowed_names(host, settings.allowed_hosts)
        server, _ = await HttpApi(local, token=token).start(sock, names)
        shown = f"[{host}]" if ":" in host else host
        base = f"http://{shown}:{sock.getsockname()[1]}"
        print(f"sessionq serving on {base} (indexing...)", file=sys.stderr, flush=True)
        try:
            local.start()
            ready = asyncio.ensure_future(local.wait_ready())
            stop = asyncio.ensure_future(stopping.wait())
            await asyncio.wait({ready, stop}, return_when=asyncio.FIRST_COMPLETED)
            if ready.done():
                _print_ready(local, base)
                await stop
            ready.cancel()
        finally:
            await server.close()
            await local.stop()
            local.close()

    return run_until_stopped(main, "serve", settings.event_loop) or EXIT_OK


def _print_ready(local: object, base: str) -> None:
    from worker.local_service import LocalService

    assert isinstance(local, LocalService) and local.source is not None
    s = local.source.status
    who = "" if s.writer is None else f" ({s.writer} writes the data dir)"
    skipped = f", {len(s.rejected)} files skipped (each named above)" if s.rejected else ""
    print(f"ready: {s.applied_records} records applied{skipped}{who}; console {base}/", flush=True)
