"""The daemon that serves every agent window of a data dir configured alike: started by
the first window's front (``worker.cli.mcp_front``), which hands it the daemon's lock,
and ended when no window has been connected for ``SESSIONQ_DAEMON_IDLE_MS``.

Order: the front's settings (its flags, as it was given them, and this process's
``SESSIONQ_*`` variables, the front's) -> the checks at the door, as ``sessionq mcp``
makes them (``worker.cli.mcp_command.prepare``; a failure's line reaches the front,
which prints it and exits with this status) -> the backend -> the socket, bound and
0600 -> "ready" to the front, and from then on stdout and stderr are the daemon's log
(``<key>.log``, the previous one kept as ``.1`` past ``LOG_BYTES``) -> the windows
(``worker.transports.mcp.windows``) until idle or SIGTERM -> the backend stopped.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import socket
import sys
from pathlib import Path
from typing import Final

from indexer.store.private import make_dirs, open_file
from worker.cli.exits import EXIT_OK, EXIT_USAGE
from worker.cli.mcp_front import READY
from worker.cli.terminal import make_total
from worker.transports.mcp.rendezvous import Place, address

LOG_BYTES: Final = 8 << 20


def main(argv: list[str] | None = None) -> int:
    """Serve the windows of the spec in ``argv[0]`` (the front's JSON); the exit status."""
    make_total()
    spec = json.loads((argv if argv is not None else sys.argv[1:])[0])
    place = Place(Path(spec["dir"]), spec["key"])
    lock = int(spec["lock_fd"])  # held until this process ends
    ready = os.dup(1)
    os.set_inheritable(lock, False)
    from worker.cli.mcp_command import backend_for, prepare
    from worker.cli.runtime import run_until_stopped
    from worker.transports.mcp.binding import CallerBinder
    from worker.transports.mcp.windows import Windows

    prepared = prepare(argparse.Namespace(**spec["args"]))
    if prepared is None:
        return EXIT_USAGE
    settings = prepared.settings
    backend = backend_for(prepared)
    windows = Windows(backend, CallerBinder(workspace=settings.workspace))

    async def run(stopping: asyncio.Event) -> None:
        await backend.start()
        try:
            listener = _listen(place)
            _become_daemon(place, ready)
            await windows.serve(listener, place.socket, settings.daemon_idle_ms / 1000, stopping)
        finally:
            await backend.stop()

    return run_until_stopped(run, "mcp", settings.event_loop) or EXIT_OK


def _listen(place: Place) -> socket.socket:
    """The daemon's socket, bound where the fronts look (a stale file of a daemon that
    ended is replaced: this process holds the lock) and owner-only."""
    make_dirs(place.directory)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(place.socket)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with address(place.socket) as name:
        sock.bind(name)
    os.chmod(place.socket, 0o600)
    sock.listen(128)
    sock.setblocking(False)
    return sock


def _become_daemon(place: Place, ready: int) -> None:
    """Tell the front it may connect; stdout and stderr go to the log from now on."""
    log = place.log
    with contextlib.suppress(OSError):
        if log.stat().st_size > LOG_BYTES:
            os.replace(log, log.with_name(log.name + ".1"))
    fd = open_file(log, os.O_WRONLY | os.O_APPEND)
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    os.write(ready, READY)
    os.close(ready)


if __name__ == "__main__":
    sys.exit(main())
