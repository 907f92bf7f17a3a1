"""The one HTTP stack every port shares (``worker.web``): a real uvicorn server on a
loopback socket, spoken to in raw bytes, so each answer is what a client on the wire
gets — the guard before the body, the head and body bounds, the route table's 404/405,
and a stop that does not wait for idle connections."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator

import orjson
import pytest
from starlette.requests import Request
from starlette.responses import Response

from worker.web.asgi import Guarded, Routes, json_reply
from worker.web.heads import MAX_HEAD_BYTES
from worker.web.server import HttpServer
from worker.webguard.admit import Admission
from worker.webguard.origin import allowed_names

TOKEN = "tok-4e2f-stack"
BOUND = 1000
SEEN: list[bytes] = []
HOSTS: list[list[str]] = []


async def echo(request: Request) -> Response:
    body = await request.body()
    SEEN.append(body)
    HOSTS.append(request.headers.getlist("host"))
    return json_reply({"got": len(body)})


async def page(_: Request) -> Response:
    return Response("page", media_type="text/plain")


def app(admission: Admission) -> Guarded:
    return Guarded(Routes({("POST", "/echo"): echo, ("GET", "/"): page}), admission, BOUND)


async def serving(admission: Admission) -> AsyncIterator[int]:
    sock = socket.create_server(("127.0.0.1", 0))
    server = await HttpServer.start(app(admission), sock)
    try:
        yield server.port
    finally:
        await server.close()


@pytest.fixture
async def loopback() -> AsyncIterator[int]:
    async for port in serving(Admission(None, allowed_names("127.0.0.1"))):
        yield port


@pytest.fixture
async def tokened() -> AsyncIterator[int]:
    admission = Admission(TOKEN, None, lambda p: p == "/open", frozenset({"/"}))
    async for port in serving(admission):
        yield port


async def exchange(port: int, raw: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send ``raw``; the first response's status, headers and body."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(raw)
        await writer.drain()
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        fields = {k.lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:] if x)}
        body = await asyncio.wait_for(reader.readexactly(int(fields["content-length"])), 30)
        return status, fields, body
    finally:
        writer.close()


def request(method: str, path: str, *fields: str, body: bytes = b"") -> bytes:
    head = [f"{method} {path} HTTP/1.1", *fields]
    if body or method == "POST":
        head.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def error_code(body: bytes) -> str:
    code: str = orjson.loads(body)["error"]["code"]
    return code


async def test_a_refused_host_is_answered_before_its_body_is_sent(loopback: int) -> None:
    SEEN.clear()
    # The body is announced but never sent: only an answer before it can come back.
    raw = b"POST /echo HTTP/1.1\r\nHost: evil.example\r\nContent-Length: 10\r\n\r\n"
    status, _, body = await exchange(loopback, raw)
    assert (status, error_code(body)) == (421, "FORBIDDEN_HOST")
    status, _, body = await exchange(
        loopback, request("POST", "/echo", "Host: 127.0.0.1", "Origin: http://evil.example")
    )
    assert (status, error_code(body)) == (403, "FORBIDDEN_HOST")
    assert SEEN == []
    status, _, body = await exchange(
        loopback, request("POST", "/echo", "Host: localhost:9", body=b"abc")
    )
    assert (status, orjson.loads(body)) == (200, {"got": 3})


async def test_the_token_is_checked_on_every_path_but_the_open_ones(tokened: int) -> None:
    status, fields, body = await exchange(tokened, request("POST", "/echo", "Host: any"))
    assert (status, error_code(body), fields["www-authenticate"]) == (
        401,
        "UNAUTHENTICATED",
        "Bearer",
    )
    ok = await exchange(
        tokened, request("POST", "/echo", "Host: any", f"Authorization: Bearer {TOKEN}")
    )
    assert ok[0] == 200
    # ?token= is taken on the page only, never on an API path.
    assert (await exchange(tokened, request("GET", f"/?token={TOKEN}", "Host: a")))[0] == 200
    refused = await exchange(tokened, request("POST", f"/echo?token={TOKEN}", "Host: a"))
    assert refused[0] == 401
    # An open path needs no token; it still goes through the route table (404 here).
    status, _, body = await exchange(tokened, request("GET", "/open", "Host: a"))
    assert (status, error_code(body)) == (404, "NOT_FOUND")


async def test_a_repeated_guarded_header_is_refused(tokened: int) -> None:
    raw = request(
        "POST", "/echo", "Host: a", f"Authorization: Bearer {TOKEN}", "Authorization: Bearer x"
    )
    status, _, body = await exchange(tokened, raw)
    assert (status, error_code(body)) == (400, "BAD_REQUEST")


async def test_a_body_over_the_bound_is_refused_without_being_read_whole(loopback: int) -> None:
    SEEN.clear()
    announced = b"POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000000\r\n\r\n"
    status, _, body = await exchange(loopback, announced)
    assert (status, error_code(body)) == (413, "PAYLOAD_TOO_LARGE")
    chunk = b"x" * 600
    chunked = (
        b"POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n"
        + b"%x\r\n%s\r\n" % (len(chunk), chunk) * 2
    )  # 1,200 bytes and no last chunk: the bound is passed before the body ends
    status, _, body = await exchange(loopback, chunked)
    assert (status, error_code(body)) == (413, "PAYLOAD_TOO_LARGE")
    assert SEEN == []


async def test_a_head_over_the_bound_is_431_and_one_under_it_is_answered(loopback: int) -> None:
    filler = "a" * (MAX_HEAD_BYTES - 200)
    status, _, _ = await exchange(
        loopback, request("GET", "/", "Host: 127.0.0.1", f"X-F: {filler}")
    )
    assert status == 200
    endless = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-F: " + b"a" * (MAX_HEAD_BYTES + 1)
    reader, writer = await asyncio.open_connection("127.0.0.1", loopback)
    writer.write(endless)
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(), 30)  # then the server closes
    writer.close()
    assert answer.startswith(b"HTTP/1.1 431 "), answer[:100]


async def test_the_route_table_answers_404_405_and_head(loopback: int) -> None:
    status, _, body = await exchange(loopback, request("GET", "/nothing", "Host: 127.0.0.1"))
    assert (status, error_code(body)) == (404, "NOT_FOUND")
    status, fields, body = await exchange(loopback, request("GET", "/echo", "Host: 127.0.0.1"))
    assert (status, error_code(body), fields["allow"]) == (405, "METHOD_NOT_ALLOWED", "POST")
    reader, writer = await asyncio.open_connection("127.0.0.1", loopback)
    writer.write(request("HEAD", "/", "Host: 127.0.0.1"))
    await writer.drain()
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
    writer.close()
    assert head.startswith(b"HTTP/1.1 200 ")


async def test_stopping_does_not_wait_for_idle_connections() -> None:
    sock = socket.create_server(("127.0.0.1", 0))
    server = await HttpServer.start(app(Admission(None, allowed_names("127.0.0.1"))), sock)
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(request("GET", "/", "Host: 127.0.0.1"))
    await writer.drain()
    await reader.readuntil(b"page")  # answered; the connection stays open, idle
    await asyncio.wait_for(server.close(), 30)  # idle keep-alive is 75 s: not awaited
    assert await asyncio.wait_for(reader.read(), 30) == b""  # closed by the server
    writer.close()


async def test_a_head_that_never_completes_is_closed(
    loopback: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """uvicorn times out only between requests; a connection that sends nothing, or a
    head that trickles, would hold a connection for ever (``worker.web.heads``)."""
    from worker.web import heads

    monkeypatch.setattr(heads, "HEAD_TIMEOUT_S", 0.3)
    silent = await asyncio.open_connection("127.0.0.1", loopback)
    trickle = await asyncio.open_connection("127.0.0.1", loopback)
    trickle[1].write(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: a")
    await trickle[1].drain()
    for reader, writer in (silent, trickle):
        assert await asyncio.wait_for(reader.read(), 30) == b""  # closed by the server
        writer.close()


async def test_a_body_that_never_completes_ends_the_connection(
    loopback: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nobody is answered with half a body: the app never sees it, and the connection
    ends at the server's body bound."""
    from worker.web import heads

    monkeypatch.setattr(heads, "BODY_TIMEOUT_S", 0.3)
    SEEN.clear()
    reader, writer = await asyncio.open_connection("127.0.0.1", loopback)
    writer.write(b"POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 10\r\n\r\nabc")
    await writer.drain()
    assert await asyncio.wait_for(reader.read(), 30) == b""  # closed, unanswered
    writer.close()
    assert SEEN == []


async def test_a_websocket_upgrade_is_answered_as_plain_http(tokened: int) -> None:
    """No port speaks WebSocket: an upgrade meets the same guard as any request."""
    upgrade = request(
        "GET",
        "/",
        "Host: a",
        "Connection: Upgrade",
        "Upgrade: websocket",
        "Sec-WebSocket-Version: 13",
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
    )
    status, _, body = await exchange(tokened, upgrade)
    assert (status, error_code(body)) == (401, "UNAUTHENTICATED")


async def test_a_refused_request_s_trickling_body_ends_the_connection(
    tokened: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The guard answers before the body is read; the rest of that body is dropped as it
    comes, and a client that trickles it holds the connection no longer than any body
    may take (uvicorn's own timer is cancelled by every byte)."""
    from worker.web import heads

    monkeypatch.setattr(heads, "BODY_TIMEOUT_S", 0.5)
    reader, writer = await asyncio.open_connection("127.0.0.1", tokened)
    writer.write(b"POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\nx")
    await writer.drain()
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
    assert head.startswith(b"HTTP/1.1 401 "), head
    for _ in range(3):  # a byte now and then: each would cancel uvicorn's keep-alive timer
        await asyncio.sleep(0.2)
        if writer.is_closing():
            break
        writer.write(b"x")
    rest = await asyncio.wait_for(reader.read(), 30)  # then the server closes
    writer.close()
    assert b"HTTP/1.1" not in rest


async def test_a_large_refused_body_is_read_to_its_end_and_answered(tokened: int) -> None:
    """A client that sends its whole (too large) body before it reads reads its 413."""
    body = b"x" * (4 << 20)  # far past the bound and any socket buffer
    raw = request("POST", "/echo", "Host: a", f"Authorization: Bearer {TOKEN}", body=body)
    status, _, reply = await exchange(tokened, raw)
    assert (status, error_code(reply)) == (413, "PAYLOAD_TOO_LARGE")


async def test_chunked_trailers_end_the_connection(loopback: int) -> None:
    """A trailer would reach the app as a header the guard never saw."""
    HOSTS.clear()
    reader, writer = await asyncio.open_connection("127.0.0.1", loopback)
    writer.write(
        b"POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"3\r\nabc\r\n0\r\nHost: evil.example\r\n\r\n"
    )
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(), 30)
    writer.close()
    assert b" 200 " not in answer, answer[:80]
    assert all(hosts == ["127.0.0.1"] for hosts in HOSTS), HOSTS


async def test_requests_pipelined_beyond_the_bound_end_the_connection(loopback: int) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", loopback)
    writer.write(request("GET", "/", "Host: 127.0.0.1") * 200)
    await writer.drain()
    answered = await asyncio.wait_for(reader.read(), 30)  # to the end: the server closes
    writer.close()
    assert answered.count(b"HTTP/1.1 200 ") < 200
    # A client that pipelines a few is answered in full.
    reader, writer = await asyncio.open_connection("127.0.0.1", loopback)
    writer.write(request("GET", "/", "Host: 127.0.0.1") * 8)
    await writer.drain()
    replies = b""
    while replies.count(b"page") < 8:
        replies += await asyncio.wait_for(reader.read(4096), 30)
    writer.close()


async def test_replies_left_unread_end_the_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    from worker.web import heads

    monkeypatch.setattr(heads, "WRITE_TIMEOUT_S", 0.3)

    async def big(_: Request) -> Response:
        return Response(b"x" * (16 << 20), media_type="application/octet-stream")

    sock = socket.create_server(("127.0.0.1", 0))
    app = Guarded(Routes({("GET", "/big"): big}), Admission(None, None), BOUND)
    server = await HttpServer.start(app, sock)
    try:
        client = socket.socket()
        client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        client.connect(("127.0.0.1", server.port))
        client.sendall(request("GET", "/big", "Host: a"))
        await asyncio.sleep(1.0)  # unread: the server's send buffer fills, then its timer runs
        client.settimeout(30)
        got = 0
        with contextlib.suppress(ConnectionResetError):
            while chunk := client.recv(1 << 16):
                got += len(chunk)
        client.close()
        assert got < 16 << 20  # the reply was cut off, not waited on for ever
    finally:
        await server.close()


async def test_every_connection_sends_without_waiting_for_acks() -> None:
    """``TCP_NODELAY`` on every accepted connection, whatever socket the port listens on
    (``socket.create_server`` makes one with ``proto`` 0, on which asyncio leaves Nagle on:
    each reply after a connection's first then waited for the client's delayed ACK)."""
    sock = socket.create_server(("127.0.0.1", 0))
    assert sock.proto == 0
    server = await HttpServer.start(app(Admission(None, allowed_names("127.0.0.1"))), sock)
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(request("GET", "/", "Host: 127.0.0.1"))
        await asyncio.wait_for(reader.readuntil(b"page"), 30)
        connections = server._server.server_state.connections
        assert connections
        for protocol in connections:
            accepted = protocol.transport.get_extra_info("socket")
            assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
        writer.close()
    finally:
        await server.close()
