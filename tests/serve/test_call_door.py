"""The tool-call door of ``serve`` (``worker.http.front``), met over real sockets: a plain
``POST /v1/call`` is answered by the door, byte for byte as aiohttp answers it; every
other request — another path, an unusual or malformed head, a refused guard, an
oversized body — reaches aiohttp from its first byte and gets aiohttp's answer, on the
same connection; pipelined and byte-by-byte requests are answered in order; idle
connections are closed; hostile heads never hurt the server."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
import random
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.serve.conftest import Served, call_body, embedded_service, running_embedded
from worker.devtools.demo_corpus import DemoSummary
from worker.http.api import HttpApi
from worker.http.front import (
    LOOKAHEAD_BYTES,
    Answer,
    CallDoor,
    Headers,
    body_length,
    parse_head,
)

AIOHTTP = "aiohttp"  # in the Server header of every aiohttp response; the door sends none


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def by_aiohttp(self) -> bool:
        return AIOHTTP in self.headers.get("server", "")

    def json(self) -> object:
        return json.loads(self.body)


async def read_response(reader: asyncio.StreamReader) -> Response:
    """One response (interim 1xx ones skipped), framed by its Content-Length."""
    while True:
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ")[1])
        headers = {}
        for line in lines[1:]:
            if line:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
        if status >= 200:
            break
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return Response(status, headers, body)


def call_request(body: bytes, *extra: str, host: str = "127.0.0.1") -> bytes:
    head = [
        "POST /v1/call HTTP/1.1",
        f"Host: {host}",
        "Content-Type: application/json",
        f"Content-Length: {len(body)}",
        *extra,
    ]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def chunked_request(body: bytes) -> bytes:
    head = "POST /v1/call HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n"
    return head.encode() + b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)


GET_HEALTHZ = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


@pytest.fixture
async def wire(served: Served) -> AsyncIterator[tuple[asyncio.StreamReader, asyncio.StreamWriter]]:
    port = int(served.base.rsplit(":", 1)[1])
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        yield reader, writer
    finally:
        writer.close()


def a_call(served: Served, *, request_id: str = "door-1") -> bytes:
    caller = served.summary.find("pay-webhook-retry").id
    body = call_body("session_search", {"query": "幂等性"}, caller, id=request_id)
    return json.dumps(body, ensure_ascii=False).encode()


async def exchange(
    wire: tuple[asyncio.StreamReader, asyncio.StreamWriter], data: bytes, replies: int = 1
) -> list[Response]:
    reader, writer = wire
    writer.write(data)
    await writer.drain()
    return [await read_response(reader) for _ in range(replies)]


# ---- the door answers as aiohttp does -----------------------------------------------------------
async def test_a_call_through_the_door_equals_the_same_call_through_aiohttp(
    served: Served, wire: tuple[asyncio.StreamReader, asyncio.StreamWriter]
) -> None:
    body = a_call(served)
    (door,) = await exchange(wire, call_request(body))
    port = int(served.base.rsplit(":", 1)[1])
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        (routed,) = await exchange((reader, writer), chunked_request(body))
    finally:
        writer.close()
    assert not door.by_aiohttp and routed.by_aiohttp
    assert (door.status, door.body) == (routed.status, routed.body) == (200, door.body)
    assert door.headers["content-type"] == routed.headers["content-type"] == "application/json"
    reply = door.json()
    assert isinstance(reply, dict) and reply["ok"] is True and reply["id"] == "door-1"
    assert "Session search results" in reply["text"]


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        (b"{not json", 400, "BAD_REQUEST"),
        (b'{"arguments": {}}', 400, "BAD_REQUEST"),
        (b'{"tool": "no_such_tool", "arguments": {}}', 404, "UNKNOWN_TOOL"),
    ],
)
async def test_the_door_refuses_bad_calls_with_aiohttps_statuses_and_bodies(
    served: Served, body: bytes, status: int, code: str
) -> None:
    port = int(served.base.rsplit(":", 1)[1])
    answers = []
    for request in (call_request(body), chunked_request(body)):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            (answer,) = await exchange((reader, writer), request)
        finally:
            writer.close()
        answers.append(answer)
    door, routed = answers
    assert not door.by_aiohttp and routed.by_aiohttp
    assert door.status == routed.status == status
    assert door.body == routed.body
    assert door.headers["content-type"] == routed.headers["content-type"]
    error = door.json()
    assert isinstance(error, dict) and error["error"]["code"] == code


# ---- connections --------------------------------------------------------------------------------
async def test_calls_and_other_paths_share_one_keep_alive_connection(
    served: Served, wire: tuple[asyncio.StreamReader, asyncio.StreamWriter]
) -> None:
    body = a_call(served)
    first, second = [(await exchange(wire, call_request(body)))[0] for _ in range(2)]
    (health,) = await exchange(wire, GET_HEALTHZ)
    (after,) = await exchange(wire, call_request(body))  # the connection is aiohttp's now
    assert [first.status, second.status, health.status, after.status] == [200] * 4
    assert not first.by_aiohttp and not second.by_aiohttp
    assert health.by_aiohttp and health.json() == {"status": "ok"}
    assert after.by_aiohttp and after.body == first.body


async def test_pipelined_requests_are_answered_in_order(
    served: Served, wire: tuple[asyncio.StreamReader, asyncio.StreamWriter]
) -> None:
    one, two = a_call(served, request_id="p-1"), a_call(served, request_id="p-2")
    manifest = b"GET /v1/manifest HTTP/1.1\r\nHost: localhost\r\n\r\n"
    replies = await exchange(
        wire, call_request(one) + call_request(two) + manifest + call_request(one), 4
    )
    ids = [r.json()["id"] for r in replies[:2]]  # type: ignore[index]
    assert ids == ["p-1", "p-2"]
    assert "tools" in replies[2].json()  # type: ignore[operator]
    assert replies[2].by_aiohttp and replies[3].by_aiohttp
    assert replies[3].json()["id"] == "p-1"  # type: ignore[index]


async def test_a_request_arriving_byte_by_byte_is_answered(
    served: Served, wire: tuple[asyncio.StreamReader, asyncio.StreamWriter]
) -> None:
    reader, writer = wire
    for byte in call_request(a_call(served)):
        writer.write(bytes([byte]))
        await writer.drain()
    reply = await read_response(reader)
    assert reply.status == 200 and not reply.by_aiohttp


async def test_connection_close_is_honoured(
    served: Served, wire: tuple[asyncio.StreamReader, asyncio.StreamWriter]
) -> None:
    (reply,) = await exchange(wire, call_request(a_call(served), "Connection: close"))
    assert reply.status == 200 and reply.headers["connection"] == "close"
    assert await asyncio.wait_for(wire[0].read(), 10) == b""


# ---- what the door leaves to aiohttp ------------------------------------------------------------
UNUSUAL = [
    # (name, request built from a valid call body, expected status)
    ("folded header", lambda b: call_request(b, "X-Note: a\r\n b"), 400),
    ("two lengths", lambda b: call_request(b, f"Content-Length: {len(b)}"), 400),
    ("length and chunked", lambda b: call_request(b, "Transfer-Encoding: chunked"), 400),
    ("expect continue", lambda b: call_request(b, "Expect: 100-continue"), 200),
    ("HTTP/1.0", lambda b: call_request(b).replace(b"HTTP/1.1", b"HTTP/1.0", 1), 200),
    ("query string", lambda b: call_request(b).replace(b"/v1/call", b"/v1/call?x=1", 1), 200),
    ("lower-case method", lambda b: call_request(b).replace(b"POST", b"post", 1), 400),
    ("foreign host", lambda b: call_request(b, host="evil.example"), 421),
    ("foreign origin", lambda b: call_request(b, "Origin: http://evil.example"), 403),
    ("upgrade", lambda b: call_request(b, "Connection: Upgrade", "Upgrade: websocket"), 200),
    ("gzip body", lambda b: call_request(gzip.compress(b), "Content-Encoding: gzip"), 200),
]


@pytest.mark.parametrize(("name", "build", "status"), UNUSUAL, ids=[u[0] for u in UNUSUAL])
async def test_unusual_requests_get_aiohttps_answer(
    served: Served,
    wire: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    name: str,
    build: object,
    status: int,
) -> None:
    assert callable(build)
    (reply,) = await exchange(wire, build(a_call(served)))
    assert reply.status == status, (name, reply.body[:300])
    assert reply.by_aiohttp, name


@pytest.mark.parametrize(
    ("extra", "status"),
    [
        ([f"X-F{i}: v" for i in range(3000)], 400),  # more fields than aiohttp takes
        (["X-Long: " + "v" * 50_000], 400),  # a field longer than aiohttp takes
        ([f"X-F{i}: " + "v" * 90 for i in range(120)], 200),  # a head over 8 KiB
    ],
    ids=["3000 fields", "one 50 kB field", "11 kB head"],
)
async def test_a_head_sent_whole_but_over_the_bounds_gets_aiohttps_answer(
    served: Served,
    wire: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    extra: list[str],
    status: int,
) -> None:
    (reply,) = await exchange(wire, call_request(a_call(served), *extra))
    assert reply.status == status and reply.by_aiohttp


async def test_a_malformed_origin_is_refused_and_the_connection_goes_on(
    served: Served, wire: tuple[asyncio.StreamReader, asyncio.StreamWriter]
) -> None:
    body = a_call(served)
    replies = await exchange(
        wire, call_request(body) + call_request(body, "Origin: http://[::1") + GET_HEALTHZ, 3
    )
    assert [r.status for r in replies] == [200, 403, 200]
    assert not replies[0].by_aiohttp and replies[1].by_aiohttp


async def test_pipelined_calls_before_a_half_close_are_all_answered(
    served: Served, wire: tuple[asyncio.StreamReader, asyncio.StreamWriter]
) -> None:
    reader, writer = wire
    writer.write(b"".join(call_request(a_call(served, request_id=f"h-{i}")) for i in range(3)))
    writer.write_eof()
    replies = [await read_response(reader) for _ in range(3)]
    assert [r.json()["id"] for r in replies] == ["h-0", "h-1", "h-2"]  # type: ignore[index]
    assert await asyncio.wait_for(reader.read(), 10) == b""


async def test_a_body_over_the_bound_is_413_from_aiohttp(
    served: Served, wire: tuple[asyncio.StreamReader, asyncio.StreamWriter]
) -> None:
    from worker.http.api import MAX_BODY_BYTES

    body = b'{"tool": "session_search", "arguments": {"query": "' + b"x" * MAX_BODY_BYTES + b'"}}'
    (reply,) = await exchange(wire, call_request(body))
    assert reply.status == 413 and reply.by_aiohttp
    assert reply.json()["error"]["code"] == "PAYLOAD_TOO_LARGE"  # type: ignore[index]


async def test_with_a_token_only_an_authenticated_call_takes_the_door(
    demo: DemoSummary, tmp_path: Path
) -> None:
    async with running_embedded(demo.root, tmp_path / "data", token="s3cret-token") as (
        _api,
        base,
        _http,
    ):
        served = Served(base, _http, demo, _api)
        port = int(base.rsplit(":", 1)[1])
        body = a_call(served)
        replies = []
        token = "Authorization: Bearer s3cret-token"
        requests = [
            call_request(body, token),
            call_request(body, "Authorization: Bearer nope"),
            call_request(body),
            call_request(body, token).replace(b"Host: 127.0.0.1\r\n", b""),
        ]
        for request in requests:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            try:
                replies.extend(await exchange((reader, writer), request))
            finally:
                writer.close()
    good, wrong, missing, hostless = replies
    assert good.status == 200 and not good.by_aiohttp
    for refused in (wrong, missing):
        assert refused.status == 401 and refused.by_aiohttp
        assert refused.headers["www-authenticate"] == "Bearer"
    assert hostless.status == 400 and hostless.by_aiohttp  # HTTP/1.1 needs a Host


# ---- hostile heads ----------------------------------------------------------------------------
def _mutations(valid: bytes, rng: random.Random, n: int) -> list[bytes]:
    head, _, body = valid.partition(b"\r\n\r\n")
    out = []
    for _ in range(n):
        data = bytearray(head)
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(len(data))
            choice = rng.random()
            if choice < 0.4:
                data[at] = rng.choice(b"\r\n\t \x00:\x7f\xff/0aZ")
            elif choice < 0.7:
                del data[at]
            else:
                data[at:at] = rng.choice([b"\r\n", b"\n", b":", b" ", b"\r\nX: y", b"9"])
        out.append(bytes(data) + b"\r\n\r\n" + body)
    return out


async def test_mutated_heads_never_hurt_the_server(served: Served) -> None:
    port = int(served.base.rsplit(":", 1)[1])
    valid = call_request(a_call(served))
    for request in _mutations(valid, random.Random(22), 120):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            writer.write(request)
            writer.write_eof()
            answered = await asyncio.wait_for(reader.read(), 30)  # any answer, or a close
        finally:
            writer.close()
        if answered:
            assert answered.startswith(b"HTTP/1.1 "), answered[:200]
    # ... and it still answers, through the door
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        (reply,) = await exchange((reader, writer), valid)
    finally:
        writer.close()
    assert reply.status == 200 and not reply.by_aiohttp


# ---- the door alone ---------------------------------------------------------------------------
@contextlib.asynccontextmanager
async def door_alone(
    answer: Answer, admits: Callable[[Headers], bool] = lambda _f: True, *, idle_s: float = 75.0
) -> AsyncIterator[tuple[CallDoor, int]]:
    """A door with ``answer`` on a loopback port (no aiohttp behind it)."""
    door = CallDoor(answer, admits, 1 << 20, idle_s=idle_s)
    door.bind(asyncio.Protocol)
    server = await asyncio.get_running_loop().create_server(door, "127.0.0.1", 0)
    try:
        yield door, server.sockets[0].getsockname()[1]
    finally:
        server.close()
        await door.close(1)


@contextlib.asynccontextmanager
async def connected(
    port: int, *, limit: int = 1 << 16
) -> AsyncIterator[tuple[asyncio.StreamReader, asyncio.StreamWriter]]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=limit)
    try:
        yield reader, writer
    finally:
        writer.close()


async def echo(body: bytes, _ms: float) -> tuple[int, bytes, str]:
    return 200, body, "application/json"


async def test_idle_and_unfinished_connections_are_closed() -> None:
    async with door_alone(echo, idle_s=0.2) as (_door, port):
        for sent in (b"", b"POST /v1/call HTTP/1.1\r\nHost: x\r\n", call_request(b"{}")):
            async with connected(port) as (reader, writer):
                writer.write(sent)
                received = await asyncio.wait_for(reader.read(), 10)  # the server closes
            assert received.endswith(b"\r\n\r\n{}") if sent.endswith(b"{}") else received == b""


async def test_a_client_that_does_not_read_stops_being_answered_until_it_reads() -> None:
    """Replies past the socket's buffers pause the door: no next request is taken until
    the client reads; then every reply arrives, in order."""
    answered: list[bytes] = []

    async def answer(body: bytes, _ms: float) -> tuple[int, bytes, str]:
        answered.append(body)
        return 200, body * (1 << 20), "application/octet-stream"  # 1 MiB per reply

    async with door_alone(answer) as (_door, port), connected(port, limit=1 << 22) as wire:
        reader, writer = wire
        writer.write(b"".join(call_request(b"%d" % (i % 10)) for i in range(64)))
        await writer.drain()
        await asyncio.sleep(1.0)
        assert 0 < len(answered) < 64  # 64 MiB of replies do not fit any buffer
        replies = [await read_response(reader) for _ in range(64)]
    assert [r.body[:1] for r in replies] == [b"%d" % (i % 10) for i in range(64)]
    assert len(answered) == 64


async def test_the_buffer_stays_bounded_under_a_flood_of_pipelined_calls() -> None:
    async def answer(body: bytes, _ms: float) -> tuple[int, bytes, str]:
        await asyncio.sleep(0)
        return 200, body, "application/json"

    request = call_request(b"{}")
    batches = (16 << 20) // len(request) // 1000  # 16 MiB of calls, 1,000 per write
    most = 0
    async with door_alone(answer) as (door, port), connected(port) as (reader, writer):

        async def sample() -> None:
            nonlocal most
            while True:
                most = max([most, *(len(c.buffer) for c in door._open)])
                await asyncio.sleep(0.001)

        async def send() -> None:
            for _ in range(batches):
                writer.write(request * 1000)
                await writer.drain()

        sampler, sending = asyncio.ensure_future(sample()), asyncio.ensure_future(send())
        try:
            for _ in range(batches * 1000):
                await read_response(reader)
            await sending
        finally:
            sampler.cancel()
    assert 0 < most <= LOOKAHEAD_BYTES + (1 << 20), most  # the lookahead and one read


async def test_a_head_is_judged_once_however_its_body_trickles_in() -> None:
    judged = 0

    def admits(_fields: Headers) -> bool:
        nonlocal judged
        judged += 1
        return True

    body = b'{"x": "' + b"y" * 300 + b'"}'
    request = call_request(body)
    head_end = request.index(b"\r\n\r\n") + 4
    async with door_alone(echo, admits) as (_door, port), connected(port) as (reader, writer):
        writer.write(request[:head_end])
        for byte in request[head_end:]:
            writer.write(bytes([byte]))
            await writer.drain()
            await asyncio.sleep(0)
        reply = await read_response(reader)
    assert reply.body == body and judged == 1


async def test_a_client_that_never_reads_is_cut_off_when_idle() -> None:
    async def answer(body: bytes, _ms: float) -> tuple[int, bytes, str]:
        return 200, b"x" * (1 << 20), "application/octet-stream"

    async with door_alone(answer, idle_s=0.3) as (door, port), connected(port) as wire:
        wire[1].write(call_request(b"{}") * 64)  # 64 MiB of replies, never read
        await wire[1].drain()
        for _ in range(200):
            await asyncio.sleep(0.05)
            if not door._open:
                break
        assert not door._open  # closed with its replies unread


async def test_nothing_after_a_connection_close_is_taken() -> None:
    """A request pipelined after one that asked for ``Connection: close`` is neither
    answered nor handed on, however late the client reads the closing reply."""
    answered: list[bytes] = []

    async def answer(body: bytes, _ms: float) -> tuple[int, bytes, str]:
        answered.append(body)
        return 200, body * (8 << 20), "application/octet-stream"  # 8 MiB: writing pauses

    async with door_alone(answer) as (_door, port), connected(port, limit=1 << 24) as wire:
        reader, writer = wire
        writer.write(call_request(b"1", "Connection: close") + call_request(b"2") + GET_HEALTHZ)
        await writer.drain()
        await asyncio.sleep(0.5)
        reply = await read_response(reader)
        assert await asyncio.wait_for(reader.read(), 10) == b""
    assert reply.headers["connection"] == "close" and answered == [b"1"]


async def test_a_slow_upload_is_not_idle() -> None:
    body = b'{"x": "' + b"y" * 8 + b'"}'
    request = call_request(body)
    piece = len(request) // 8 + 1
    async with door_alone(echo, idle_s=0.5) as (_door, port), connected(port) as (reader, writer):
        for at in range(0, len(request), piece):  # 8 pieces, 1.6 s in all
            writer.write(request[at : at + piece])
            await writer.drain()
            await asyncio.sleep(0.2)
        reply = await read_response(reader)
    assert reply.status == 200 and reply.body == body


async def test_connections_handed_to_aiohttp_are_closed_when_idle_too(
    demo: DemoSummary, tmp_path: Path
) -> None:
    local = embedded_service(demo.root, tmp_path / "data")
    runner, port = await HttpApi(local).start("127.0.0.1:0", idle_s=0.5)
    try:
        async with connected(port) as wire:
            (health,) = await exchange(wire, GET_HEALTHZ)
            assert health.by_aiohttp
            assert await asyncio.wait_for(wire[0].read(), 30) == b""  # closed when idle
    finally:
        await runner.cleanup()
        local.close()


def test_parse_head_takes_plain_fields_only() -> None:
    assert parse_head(b"Host: a\r\nContent-Length: 2\r\nX-A:  b \t") == {
        "host": "a",
        "content-length": "2",
        "x-a": "b",
    }
    for bad in (
        b"Host a",
        b" Host: a",
        b"Host: a\r\n b",
        b"Ho st: a",
        b"Host: a\x00",
        b"Host: a\nX: b",
        b"Host: a\r\nhost: b",
        b"Transfer-Encoding: chunked",
        b"Expect: 100-continue",
        b"Upgrade: h2c",
        b"Host: \xff",
    ):
        assert parse_head(bad) is None, bad


def test_body_length_takes_plain_digits_within_the_bound() -> None:
    assert body_length({"content-length": "12"}, 100) == 12
    assert body_length({"content-length": "12", "connection": "Keep-Alive"}, 100) == 12
    for fields in (
        {},
        {"content-length": "+12"},
        {"content-length": "1 2"},
        {"content-length": "0x10"},
        {"content-length": "101"},
        {"content-length": "12345678901"},
        {"content-length": "1", "connection": "upgrade"},
    ):
        assert body_length(fields, 100) is None, fields
