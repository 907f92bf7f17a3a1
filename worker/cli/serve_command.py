"""``sessionq serve``: embedded mode in the foreground, with a progress bar on a terminal."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys

from worker.cli.options import EXIT_OK, fail, settings_from
from worker.cli.runtime import on_terminate, setup_logging
from worker.settings import ServeSettings


def _token(settings: ServeSettings) -> str | None:
    """The bearer token, checked before binding: beyond loopback one is required; an
    unreadable or empty token file exits 2 (the message names the file, never the token)."""
    from worker.http.auth import TokenFileError, is_loopback, load_token
    from worker.http.ops import parse_listen

    try:
        host, _ = parse_listen(settings.listen)
    except ValueError as exc:
        fail("serve", f"--listen / SESSIONQ_LISTEN: {exc}")
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


def cmd_serve(args: argparse.Namespace) -> int:
    from worker.http.embedded import Embedded
    from worker.http.ops import start_server

    settings = settings_from(ServeSettings, args)
    token = _token(settings)
    setup_logging(settings)

    async def main() -> None:
        embedded = Embedded(
            settings.sessions,
            settings.data,
            limits=settings.tools,
            token=token,
            retain_days=settings.retain_days,
            retention_check_s=settings.retention_check_ms / 1000,
            log_format=None if settings.format == "auto" else settings.format,
            redaction=settings.redaction,
        )
        runner, port = await start_server(embedded.app(), settings.listen)
        host = settings.listen.rpartition(":")[0].strip("[]")
        base = f"http://{host}:{port}"
        print(f"sessionq serving on {base} (ingesting...)", file=sys.stderr, flush=True)
        bar = None
        if sys.stderr.isatty():
            from tqdm import tqdm

            bar = tqdm(unit="record", file=sys.stderr, desc="ingest")

        def progress(done: int, total: int) -> None:
            if bar is not None:
                bar.total = total
                bar.n = done
                bar.refresh()

        try:
            await embedded.initial_ingest(progress)
            if bar is not None:
                bar.close()
            s = embedded.status
            print(
                f"ready: {s.applied_records} records applied, {len(s.rejected)} files rejected;"
                f" console {base}/",
                flush=True,
            )
            for reason in s.rejected.values():
                print(f"  rejected: {reason}", file=sys.stderr)
            watch = asyncio.ensure_future(embedded.watch(settings.poll_ms / 1000))

            async def _stop() -> None:
                watch.cancel()

            on_terminate(_stop)
            with contextlib.suppress(asyncio.CancelledError):
                await watch
        finally:
            await runner.cleanup()
            embedded.close()

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        return EXIT_OK
    return EXIT_OK
