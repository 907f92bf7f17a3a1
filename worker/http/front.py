"""The tool-call door of ``serve``: ``POST /v1/call`` answered without aiohttp's request
machinery, every other request handed to aiohttp whole.

A call through aiohttp spent about as much CPU in its request and response objects,
router and middlewares as in the tool itself (``bench/README.md``). This door reads each
request on a connection and answers it here only when it has the one plain shape a tool
call has — the request line ``POST /v1/call HTTP/1.1``, well-formed header lines, a
``Content-Length`` body, no ``Transfer-Encoding``, ``Content-Encoding``, ``Expect`` or
``Upgrade``, at most
``MAX_HEAD_BYTES`` of head and ``max_body`` of body, and the API's guards admitting it
(``admits``). Anything else — another path, a malformed or ambiguous head, a refused
guard, an oversized body — is not parsed any further: from that request's first byte the
connection is aiohttp's (``fallback``), which answers it as it always did (404, 400, 401,
413, 421, ...). So this door decides nothing that aiohttp would decide otherwise; it only
frames requests whose framing no reader can disagree on, and it never reads past the
request it answers (a request starts where the previous one's body ended).

Requests on one connection are answered in order, one at a time, as aiohttp does. A
connection that neither sends nor reads for ``idle_s`` is closed (aborted when its
replies are unread); behind the door aiohttp closes its idle connections after as long.
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
MAX_FIELDS: Final = 100  # aiohttp refuses more than 128
LOOKAHEAD_BYTES: Final = 64 * 1024  # read ahead of the request being answered
IDLE_S: Final = 75.0  # also aiohttp's keep-alive timeout behind the door (``ops.serve_on``)
_END: Final = b"\r\n\r\n"
_NAME: Final = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_VALUE: Final = re.compile(rb"[\t\x20-\x7e]*")
_DIGITS: Final = re.compile(rb"[0-9]{1,10}")
_SINGLE: Final = frozenset(
    {b"host", b"origin", b"authorization", b"content-length", b"connection", b"content-type"}
)
_REFUSED: Final = frozenset({b"transfer-encoding", b"expect", b"upgrade", b"content-encoding"})
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
    """One accepted connection while its requests are tool calls (module docstring).

    Bounds: the buffer holds at most the request being assembled (its head at most
    ``MAX_HEAD_BYTES``, its body at most ``max_body``) plus ``LOOKAHEAD_BYTES`` of what
    follows while a request is answered or the client is not reading its replies; past
    that the socket is not read. A request's head is judged once, when it is complete.
    """

    def __init__(self, door: CallDoor) -> None:
        self.door = door
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.pending: tuple[int, int, bool] | None = None  # body start, length, keep-alive
        self.task: asyncio.Task[None] | None = None
        self.eof = False  # the client sent all it will send
        self.in_eof = False  # within eof_received
        self.handed_eof: bool | None = None  # aiohttp's protocol's eof_received answer
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
        self.last_active = asyncio.get_running_loop().time()  # a slow upload is no idle one
        self._go_on()

    def eof_received(self) -> bool | None:
        self.eof = True
        self.in_eof = True
        try:
            self._go_on()
        finally:
            self.in_eof = False
        if self.transport is None:  # handed over just now: aiohttp's protocol answered
            return self.handed_eof
        return not self.transport.is_closing()

    def pause_writing(self) -> None:
        self.writing_paused = True  # no next request is taken until the replies drain

    def resume_writing(self) -> None:
        self.writing_paused = False
        self.last_active = asyncio.get_running_loop().time()  # a slow reader is no idle one
        self._go_on()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_timer()
        self.door.left(self)

    # ---- requests ------------------------------------------------------------------------------
    def _go_on(self) -> None:
        """Take the next request when none is being answered and the client reads; read
        the socket while the buffer is within its bound (class docstring). Nothing after
        a close (``Connection: close`` answered) is taken."""
        if self.transport is None or self.transport.is_closing():
            return
        if self.task is None and not self.writing_paused:
            self._next()
        transport = self.transport
        if transport is None or transport.is_closing():
            return  # handed over or closed
        if self.task is None and not self.writing_paused:
            if self.eof:
                transport.close()  # every whole request was answered
            elif self.reading_paused:
                self.reading_paused = False
                transport.resume_reading()
        elif len(self.buffer) > LOOKAHEAD_BYTES and not self.reading_paused and not self.eof:
            self.reading_paused = True
            transport.pause_reading()

    def _next(self) -> None:
        """Answer the request at the front of the buffer once it is whole, or hand the
        connection over when it is not a plain tool call."""
        buffer = self.buffer
        if self.pending is None:
            if not buffer.startswith(REQUEST_LINE):
                if len(buffer) >= len(REQUEST_LINE) or not REQUEST_LINE.startswith(buffer):
                    self._hand_over()
                return
            end = buffer.find(_END, len(REQUEST_LINE) - 2)
            if end < 0 and len(buffer) <= MAX_HEAD_BYTES:
                return  # the head is still arriving
            judged = None if end < 0 else self._judge(bytes(buffer[len(REQUEST_LINE) : end]))
            if judged is None:
                self._hand_over()
                return
            self.pending = (end + len(_END), *judged)
        start, length, keep = self.pending
        if len(buffer) < start + length:
            return  # the body is still arriving
        self.pending = None
        body = bytes(buffer[start : start + length])
        del buffer[: start + length]
        self.task = asyncio.ensure_future(self._reply(body, time.time() * 1000, keep))

    def _judge(self, head: bytes) -> tuple[int, bool] | None:
        """(body length, keep-alive) of a head this door answers, else None; whatever
        fails in judging it (a guard's parser too) leaves the request to aiohttp."""
        if len(head) > MAX_HEAD_BYTES - len(REQUEST_LINE) or head.count(b"\r\n") >= MAX_FIELDS:
            return None
        try:
            fields = parse_head(head)
            if fields is None or "host" not in fields or not self.door.admits(fields):
                return None
        except Exception:
            return None
        length = body_length(fields, self.door.max_body)
        if length is None:
            return None
        return length, fields.get("connection", "").lower() != "close"

    async def _reply(self, body: bytes, received_ms: float, keep: bool) -> None:
        transport = self.transport
        assert transport is not None
        try:
            status, payload, content_type = await self.door.answer(body, received_ms)
        except Exception:  # the answer never raises; if it does, the client sees a close
            log.exception("tool call over HTTP failed")
            transport.abort()
            return
        finally:
            self.task = None
        if transport.is_closing():
            return
        head = b"HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\nDate: %s\r\n" % (
            status,
            _REASONS.get(status, b"Error"),
            content_type.encode(),
            len(payload),
            self.door.clock.date(),
        )
        if not keep:
            transport.write(head + b"Connection: close\r\n\r\n" + payload)
            transport.close()
            return
        transport.write(head + b"\r\n" + payload)
        self.last_active = asyncio.get_running_loop().time()
        self._go_on()

    def _hand_over(self) -> None:
        """From the buffer's first byte on, the connection is aiohttp's."""
        transport, fallback = self.transport, self.door.fallback
        assert transport is not None and fallback is not None
        self._stop_timer()
        self.door.left(self)
        self.transport = None
        protocol = cast(asyncio.Protocol, fallback())
        transport.set_protocol(protocol)
        protocol.connection_made(transport)
        if self.reading_paused:
            transport.resume_reading()
        data, self.buffer = bytes(self.buffer), bytearray()
        if data:
            protocol.data_received(data)
        if self.eof:
            keep_open = protocol.eof_received()
            if self.in_eof:
                self.handed_eof = keep_open  # the transport acts on what we return
            elif not keep_open:
                transport.close()

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
        """Close now; replies the client has not read are dropped (``abort``): a client
        that stopped reading must not hold the connection open."""
        self._stop_timer()
        transport = self.transport
        if transport is None:
            return
        if transport.get_write_buffer_size():
            transport.abort()
        else:
            transport.close()
