"""Many agent windows served by one process: each connection on the daemon's Unix socket
is one window's MCP stdio stream, relayed byte for byte by its front
(``worker.cli.mcp_front``), after the window's hello (``worker.transports.mcp.rendezvous``).

Per connection, in order: the peer must run as this user (the socket's directory is
owner-only already); one hello line within ``HELLO_S``, answered with this process's
pid (or why it is refused); then the SDK's own server (``worker.transports.mcp.server``) for that
window runs over the connection through the SDK's stdio transport (its line framing and
message parsing, over the socket instead of the process's stdin and stdout) until the
front closes it. Every window shares the backend and the binder (``worker.transports.mcp.binding``:
each call is bound for its window).

``serve_windows`` returns when ``stopping`` is set or when no window has been connected
for ``idle_s`` (or the socket's file is no longer this server's: its data dir went),
after it stopped listening and removed the socket's file.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import socket
import time
from pathlib import Path
from typing import Any, Final, cast

from worker.transports.mcp.backends import Backend
from worker.transports.mcp.binding import CallerBinder
from worker.transports.mcp.rendezvous import MAX_HELLO_BYTES, Hello, answer, peer_is_owner
from worker.transports.mcp.server import build_server
from worker.transports.mcp.window import Window

log = logging.getLogger("sessionq.mcp")
HELLO_S: Final = 10.0
MAX_LINE_BYTES: Final = 64 << 20  # a longer MCP message ends its window's connection
TICK_S: Final = 0.5


class _Lines:
    """The SDK stdio transport's input (an async iterator of text lines) over a socket."""

    def __init__(self, reader: asyncio.StreamReader, label: str) -> None:
        self.reader = reader
        self.label = label

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        try:
            line = await self.reader.readline()
        except (ValueError, ConnectionError) as exc:  # over MAX_LINE_BYTES, or reset
            log.warning("%s: its stream ends: %s", self.label, exc)
            raise StopAsyncIteration from None
        if not line:
            raise StopAsyncIteration
        return line.decode("utf-8", errors="replace")


class _Text:
    """The SDK stdio transport's output (``write`` then ``flush``) over a socket."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self.writer = writer

    async def write(self, text: str) -> None:
        self.writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self.writer.drain()


class Windows:
    """The windows connected to this process (module docstring)."""

    def __init__(self, backend: Backend, binder: CallerBinder) -> None:
        self.backend = backend
        self.binder = binder
        self.connected = 0
        self._numbers = itertools.count(1)
        self._tasks: set[asyncio.Task[Any]] = set()

    async def serve(
        self, listener: socket.socket, path: Path, idle_s: float, stopping: asyncio.Event
    ) -> None:
        """Accept windows on ``listener`` (bound at ``path``) until stopped or idle."""
        inode = os.stat(path).st_ino
        server = await asyncio.start_unix_server(self._accept, sock=listener, limit=MAX_LINE_BYTES)
        idle_since = time.monotonic()
        try:
            while not stopping.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stopping.wait(), TICK_S)
                if self.connected:
                    idle_since = time.monotonic()
                elif time.monotonic() - idle_since >= idle_s:
                    log.info("no agent window for %.0f s: the MCP daemon ends", idle_s)
                    break
                elif not _same_file(path, inode):
                    log.info("%s is gone: the MCP daemon ends", path)
                    break
        finally:
            server.close()
            if _same_file(path, inode):
                with contextlib.suppress(OSError):
                    os.unlink(path)
            for task in list(self._tasks):
                task.cancel()
            for task in list(self._tasks):
                with contextlib.suppress(BaseException):
                    await task

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        self.connected += 1
        try:
            await self._window(reader, writer)
        finally:
            self.connected -= 1
            if task is not None:
                self._tasks.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _window(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        if sock is None or not peer_is_owner(sock):
            log.warning("a connection from another user was refused")
            return
        try:
            line = await asyncio.wait_for(reader.readline(), HELLO_S)
            if len(line) > MAX_HELLO_BYTES:
                raise ValueError("the hello is too long")
            hello = Hello.parse(line)
        except (TimeoutError, ValueError, ConnectionError) as exc:
            writer.write(answer(os.getpid(), f"no usable hello: {str(exc) or 'none in time'}"))
            return
        number = next(self._numbers)
        label = f"window {number} (pid {hello.pid}, {hello.cwd})"
        hints = tuple((variable, sid) for variable, sid in hello.hints)
        window = Window(hello.cwd, hello.caller, hints, hello.started_ms, label)
        writer.write(answer(os.getpid()))
        await writer.drain()
        again = " again, after the daemon it used ended" if hello.resumed else ""
        log.info("%s connected%s; %d windows", label, again, self.connected)
        connection = f"window-{number}"
        server = build_server(self.backend, self.binder, window, connection)
        try:
            await _run(server, reader, writer, label)
        finally:
            self.binder.forget(connection)
            log.info("%s closed; %d windows", label, self.connected - 1)


async def _run(
    server: Any, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, label: str
) -> None:
    """The SDK's server over one window's connection, through the SDK's stdio transport."""
    from mcp.server.stdio import stdio_server

    lines, text = cast(Any, _Lines(reader, label)), cast(Any, _Text(writer))
    try:
        async with stdio_server(lines, text) as (read, write):
            await server.run(read, write, server.create_initialization_options())
    except Exception as exc:  # the front went away mid-answer: that window ends alone
        log.info("%s: its stream ended: %s", label, exc)


def _same_file(path: Path, inode: int) -> bool:
    try:
        return os.stat(path).st_ino == inode
    except OSError:
        return False
