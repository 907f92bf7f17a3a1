"""The bounds on a request under uvicorn's httptools parser (the one every port uses:
``BoundedHeads``): its head's size, and the time its head and its body may take.

llhttp, under httptools, does not bound a head's size — Node applies its own — and
httptools accumulates a header line until it ends, so a client could send one endless
header line. ``BoundedHeads`` counts the bytes a connection sends while a request's head
is open and answers 431 and closes once they pass ``MAX_HEAD_BYTES``.

Neither bounds the time: uvicorn times a connection out only between requests, after a
response, and any byte that arrives cancels that timer. So a client that connects and
sends nothing, a head one byte a minute, or a body one byte a minute — also the body of
a request the guard refused, which nobody reads and uvicorn drops — would hold its
connection (and one of the server's ``MAX_CONNECTIONS``) for ever. ``BoundedHeads``
closes a connection whose request head is not complete ``HEAD_TIMEOUT_S`` after the
connection opened or the head began, or whose body is not complete ``BODY_TIMEOUT_S``
after its head; and one that leaves its replies unread for ``WRITE_TIMEOUT_S`` once the
send buffer is full.

Two more things a client could push into a connection unbounded are refused by closing
it: requests pipelined ahead of their replies beyond ``MAX_PIPELINED`` (uvicorn queues a
request per head, whatever its count), and chunked trailers (httptools hands them to
uvicorn as headers, appended to the request's headers after the guard read them; no
port has a use for them).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from typing import Final

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

HEAD_TIMEOUT_S = 30.0
"""The longest a request's head may take to arrive (read when its timer is armed)."""
BODY_TIMEOUT_S = 60.0
"""The longest a request's body may take to arrive once its head has."""
WRITE_TIMEOUT_S = 30.0
"""The longest a client may leave its replies unread once the send buffer is full."""
MAX_PIPELINED: Final = 16
"""Requests a connection may send ahead of their replies (uvicorn queues each one)."""
MAX_HEAD_BYTES: Final = 16 * 1024
"""h11's default size; far above what any client of these ports sends (a bearer token, an
MCP session id)."""
_TOO_LARGE_TEXT: Final = f"request head exceeds {MAX_HEAD_BYTES} bytes".encode()
_TOO_LARGE: Final = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\n"
    b"content-type: text/plain; charset=utf-8\r\n"
    + f"content-length: {len(_TOO_LARGE_TEXT)}\r\n".encode()
    + b"connection: close\r\n\r\n"
    + _TOO_LARGE_TEXT
)


class BoundedHeads(HttpToolsProtocol):
    """uvicorn's httptools protocol with the bounds of the module docstring."""

    _head_open = True  # between a message's end (or the connection's start) and a head
    _head_bytes = 0
    _message_timer: asyncio.TimerHandle | None = None
    _write_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        no_delay(transport)
        super().connection_made(transport)
        self._time(HEAD_TIMEOUT_S)

    def connection_lost(self, exc: Exception | None) -> None:
        self._untime()
        if self._write_timer is not None:
            self._write_timer.cancel()
            self._write_timer = None
        super().connection_lost(exc)

    def _time(self, seconds: float) -> None:
        """The current part of the message must arrive within ``seconds``."""
        self._untime()
        self._message_timer = self.loop.call_later(seconds, self._close)

    def _untime(self) -> None:
        if self._message_timer is not None:
            self._message_timer.cancel()
            self._message_timer = None

    def _close(self) -> None:
        if not self.transport.is_closing():
            self.transport.close()

    def data_received(self, data: bytes) -> None:
        if self._head_open:
            self._head_bytes += len(data)
            if self._message_timer is None:  # a head begins
                self._time(HEAD_TIMEOUT_S)
        super().data_received(data)
        if (
            self._head_open
            and self._head_bytes > MAX_HEAD_BYTES
            and not self.transport.is_closing()
        ):
            self.transport.write(_TOO_LARGE)
            self.transport.close()

    def on_header(self, name: bytes, value: bytes) -> None:
        if not self._head_open:  # a chunked trailer: after the guard, so never
            self._close()
            return
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._head_open = False
        self._time(BODY_TIMEOUT_S)
        super().on_headers_complete()
        if len(self.pipeline) > MAX_PIPELINED:
            self._close()

    def on_message_complete(self) -> None:
        self._untime()  # between requests, uvicorn's keep-alive timer
        super().on_message_complete()
        self._head_open, self._head_bytes = True, 0

    def pause_writing(self) -> None:
        super().pause_writing()
        if self._write_timer is None:  # abort: closing would wait for the unread bytes
            self._write_timer = self.loop.call_later(WRITE_TIMEOUT_S, self.transport.abort)

    def resume_writing(self) -> None:
        if self._write_timer is not None:
            self._write_timer.cancel()
            self._write_timer = None
        super().resume_writing()


def no_delay(transport: asyncio.BaseTransport) -> None:
    """Replies leave at once (``TCP_NODELAY``). asyncio sets it only on sockets whose
    ``proto`` is ``IPPROTO_TCP``, and a socket made with ``proto`` 0 (``socket.socket()``,
    ``socket.create_server``) accepts connections with 0 too: every reply after a
    connection's first then waited ~40 ms for the client's delayed ACK (Nagle)."""
    sock = transport.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
