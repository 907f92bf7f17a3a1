"""``sessionq serve``: embedded mode in the foreground, with a progress bar on a terminal."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys

from worker.cli.options import EXIT_OK, settings_from
from worker.cli.runtime import on_terminate, setup_logging
from worker.settings import ServeSettings


def cmd_serve(args: argparse.Namespace) -> int:
    from worker.http.embedded import Embedded
    from worker.http.ops import start_server

    settings = settings_from(ServeSettings, args)
    setup_logging(settings)

    async def main() -> None:
        embedded = Embedded(settings.sessions, settings.data, limits=settings.tools)
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
