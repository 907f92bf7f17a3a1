"""The tool-call door of ``serve``: ``POST /v1/call`` answered without aiohttp's request
machinery, every other request handed to aiohttp whole.

A call through aiohttp spent about as much CPU in its request and response objects,
router and middlewares as in the tool itself (``bench/README.md``). This door reads each
request on a connection and answers it here only when it has the one plain shape a tool
call has — the request line ``POST /v1/call HTTP/1.1``, well-formed header lines, a
``Content-Length`` body, no ``Transfer-Encoding``, ``Expect`` or ``Upgrade``, at most
``MAX_HEAD_BYTES`` of head and ``max_body`` of body, and the API's guards admitting it
(``admits``). Anything else — another path, a malformed or ambiguous head, a refused
guard, an oversized body — is not parsed any further: from that request's first byte the
connection is aiohttp's (``fallback``), which answers it as it always did (404, 400, 401,
413, 421, ...). So this door decides nothing that aiohttp would decide otherwise; it only
frames requests whose framing no reader can disagree on, and it never reads past the
request it answers (a request starts where the previous one's body ended).

Requests on one connection are answered in order, one at a time, as aiohttp does. A
connection idle (or holding an unfinished request) for ``idle_s`` is closed.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from email.utils import formatdate
from typing import Final, cast

log = logging.getLogger(__name__)

REQUEST_LINE: Final = b"POST /v1/call HTTP/1.1\r\n"
MAX_HEAD_BYTES: Final = 8192  # aiohttp's own bound on a header line is 8190
IDLE_S: Final = 75.0  # aiohttp's keep-alive timeout
_END: Final = b"\r\n\r\n"
_NAME: Final = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_VALUE: Final = re.compile(rb"[\t\x20-\x7e]*")
_DIGITS: Final = re.compile(rb"[0-9]{1,10}")
_SINGLE: Final = frozenset(
    {b"host", b"origin", b"authorization", b"content-length", b"connection", b"content-type"}
)
_REFUSED: Final = frozenset({b"transfer-encoding", b"expect", b"upgrade"})
_REASONS: Final = {200: b"OK", 400: b"Bad Request", 404: b"Not Found"}

Headers = Mapping[str, str]
Answer = Callable[[bytes, float], Awaitable[tuple[int, bytes, str]]]
"""(body, received epoch ms) -> (status, reply body, content type)."""


def parse_head(head: bytes) -> dict[str, str] | None:
    """The header fields between the request line and the blank line, names in lower
    case, when every line is a plain ``name: value`` (no folding, no control bytes, no
    repeated field of ``_SINGLE``, none of ``_REFUSED``); else None."""
    fields: dict[str, str] = {}
    if not head:
        return fields
    for line in head.split(b"\r\n"):
        name, colon, value = line.partition(b":")
        if not colon or _NAME.fullmatch(name) is None or _VALUE.fullmatch(value) is None:
            return None
        lower = name.lower()
        if lower in _REFUSED or (lower in _SINGLE and lower.decode() in fields):
            return None
        fields[lower.decode()] = value.strip(b" \t").decode("ascii")
    return fields


def body_length(fields: Headers, max_body: int) -> int | None:
    """The ``Content-Length`` of a request this door answers, or None (none given, not
    plain digits, over ``max_body``, or a ``Connection`` other than keep-alive/close)."""
    connection = fields.get("connection")
    if connection is not None and connection.lower() not in ("keep-alive", "close"):
        return None
    text = fields.get("content-length")
    if text is None or _DIGITS.fullmatch(text.encode()) is None:
        return None
    length = int(text)
    return length if length <= max_body else None


class _Clock:
    """The ``Date`` header's value, formatted once per second."""

    __slots__ = ("_second", "_text")

    def __init__(self) -> None:
        self._second = -1
        self._text = b""

    def date(self) -> bytes:
        now = int(time.time())
        if now != self._second:
            self._second, self._text = now, formatdate(now, usegmt=True).encode()
        return self._text


class CallDoor:
    """The protocol factory of a ``serve`` socket (module docstring); ``bind`` gives it
    aiohttp's factory once the runner exists."""

    def __init__(
        self,
        answer: Answer,
        admits: Callable[[Headers], bool],
        max_body: int,
        *,
        idle_s: float = IDLE_S,
    ) -> None:
        self.answer = answer
        self.admits = admits
        self.max_body = max_body
        self.idle_s = idle_s
        self.fallback: Callable[[], asyncio.BaseProtocol] | None = None
        self.clock = _Clock()
        self._open: set[_Connection] = set()

    def bind(self, fallback: Callable[[], asyncio.BaseProtocol]) -> CallDoor:
        self.fallback = fallback
        return self

    def __call__(self) -> asyncio.Protocol:
        return _Connection(self)

    def opened(self, connection: _Connection) -> None:
        self._open.add(connection)

    def left(self, connection: _Connection) -> None:
        self._open.discard(connection)

    async def close(self, timeout_s: float) -> None:
        """Close every connection this door still holds, after the calls in flight
        replied (up to ``timeout_s``)."""
        tasks = [c.task for c in self._open if c.task is not None]
        if tasks:
            await asyncio.wait(tasks, timeout=timeout_s)
        for connection in list(self._open):
            connection.close()


class _Connection(asyncio.Protocol):
    """One accepted connection while its requests are tool calls (module docstring)."""

    def __init__(self, door: CallDoor) -> None:
        self.door = door
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.task: asyncio.Task[None] | None = None
        self.closing = False
        self.last_active = 0.0
        self.timer: asyncio.TimerHandle | None = None
        self.reading_paused = False
        self.writing_paused = False  # the client reads slower than it is answered

    # ---- asyncio callbacks ---------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is no subclass
        self.door.opened(self)
        loop = asyncio.get_running_loop()
        self.last_active = loop.time()
        self.timer = loop.call_later(self.door.idle_s, self._expire)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if self.task is None and not self.writing_paused:
            self._next()
        if self.transport is None:
            return  # handed over
        if len(self.buffer) > MAX_HEAD_BYTES + self.door.max_body and not self.reading_paused:
            self.transport.pause_reading()  # a client sending ahead of its replies waits
            self.reading_paused = True

    def pause_writing(self) -> None:
        self.writing_paused = True  # no next request is read until the replies drain

    def resume_writing(self) -> None:
        self.writing_paused = False
        if self.task is None:
            self._resume()

    def eof_received(self) -> bool:
        self.closing = True
        return self.task is not None  # keep the write side open for the reply in flight

    def connection_lost(self, exc: Exception | None) -> None:
        self.closing = True
        self._stop_timer()
        self.door.left(self)

    # ---- requests ------------------------------------------------------------------------------
    def _next(self) -> None:
        """Answer the request at the front of the buffer once it is whole, or hand the
        connection over when it is not a plain tool call."""
        buffer = self.buffer
        if not buffer or self.closing:
            return
        if not buffer.startswith(REQUEST_LINE):
            if len(buffer) >= len(REQUEST_LINE) or not REQUEST_LINE.startswith(buffer):
                self._hand_over()
            return
        end = buffer.find(_END, len(REQUEST_LINE) - 2)
        if end < 0:
            if len(buffer) > MAX_HEAD_BYTES:
                self._hand_over()
            return
        fields = parse_head(bytes(buffer[len(REQUEST_LINE) : end]))
        length = None if fields is None else body_length(fields, self.door.max_body)
        if fields is None or length is None or not self.door.admits(fields):
            self._hand_over()
            return
        start = end + len(_END)
        if len(buffer) < start + length:
            return  # the body is still arriving
        body = bytes(buffer[start : start + length])
        del buffer[: start + length]
        keep = fields.get("connection", "").lower() != "close"
        self.task = asyncio.ensure_future(self._reply(body, time.time() * 1000, keep))

    async def _reply(self, body: bytes, received_ms: float, keep: bool) -> None:
        transport = self.transport
        assert transport is not None
        try:
            status, payload, content_type = await self.door.answer(body, received_ms)
        except Exception:  # the answer never raises; if it does, the client sees a close
            log.exception("tool call over HTTP failed")
            transport.close()
            return
        finally:
            self.task = None
        head = b"HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\nDate: %s\r\n" % (
            status,
            _REASONS.get(status, b"Error"),
            content_type.encode(),
            len(payload),
            self.door.clock.date(),
        )
        if transport.is_closing():
            return
        if not keep or self.closing:
            transport.write(head + b"Connection: close\r\n\r\n" + payload)
            transport.close()
            return
        transport.write(head + b"\r\n" + payload)
        self.last_active = asyncio.get_running_loop().time()
        if not self.writing_paused:
            self._resume()

    def _resume(self) -> None:
        """Read on: the next request in the buffer, then the socket again."""
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        if self.reading_paused:
            self.reading_paused = False
            transport.resume_reading()
        self._next()

    def _hand_over(self) -> None:
        """From the buffer's first byte on, the connection is aiohttp's."""
        transport, fallback = self.transport, self.door.fallback
        assert transport is not None and fallback is not None
        self._stop_timer()
        self.door.left(self)
        self.transport = None
        protocol = fallback()
        transport.set_protocol(protocol)
        protocol.connection_made(transport)
        if self.reading_paused:
            transport.resume_reading()
        data, self.buffer = bytes(self.buffer), bytearray()
        if data:
            cast(asyncio.Protocol, protocol).data_received(data)

    # ---- closing -------------------------------------------------------------------------------
    def _expire(self) -> None:
        loop = asyncio.get_running_loop()
        idle = loop.time() - self.last_active
        if self.task is None and idle >= self.door.idle_s:
            self.close()
            return
        wait = self.door.idle_s if self.task is not None else self.door.idle_s - idle
        self.timer = loop.call_later(wait, self._expire)

    def _stop_timer(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def close(self) -> None:
        self._stop_timer()
        if self.transport is not None:
            self.transport.close()
