"""No bearer token reaches ``serve``'s log: a real ``sessionq serve`` process, raw
requests whose ``Authorization`` value is the right token followed by a bare CR, a
control byte, a non-UTF-8 byte or an over-long tail (the HTTP parser refuses most of
them), at DEBUG, in both log formats. The token is nowhere in the log, and a token file written with
Windows line endings works as is."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TOKEN = "tok-5c1e9b77-logs-never"
TAILS = [b"\r", b"\x01", b"\x00", b"\x7f", b"\xff", b"\n", b"\x1b[31m", b"\r\x01", b"A" * 9000]
START_S = 120.0


class Serve:
    """A ``sessionq serve`` subprocess; its stderr goes to a file."""

    def __init__(self, tmp_path: Path, token_file: Path, env: dict[str, str]) -> None:
        (tmp_path / "logs").mkdir()
        self.log_path = tmp_path / "serve.log"
        base = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONQ_")}
        with self.log_path.open("wb") as log:
            self.proc = subprocess.Popen(
                [
                    sys.executable, "-m", "worker", "serve",
                    "--sessions", str(tmp_path / "logs"), "--data", str(tmp_path / "data"),
                    "--listen", "127.0.0.1:0", "--token-file", str(token_file),
                ],
                cwd=REPO,
                env={**base, "SESSIONQ_LOG_LEVEL": "DEBUG", **env},
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )  # fmt: skip
        self.port = self._wait_for_port()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def _wait_for_port(self) -> int:
        deadline = time.monotonic() + START_S
        while time.monotonic() < deadline:
            found = re.search(r"serving on http://127\.0\.0\.1:(\d+)", self.log())
            if found and "ready:" in self.log():
                return int(found.group(1))
            assert self.proc.poll() is None, self.log()
            time.sleep(0.05)
        raise AssertionError(f"serve not ready within {START_S} s:\n{self.log()}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)


def raw_request(port: int, head: bytes, body: bytes = b"") -> bytes:
    """One request as bytes; the response's status line (empty: the server closed)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(head + body)
        sock.settimeout(10)
        data = b""
        while b"\r\n" not in data:
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
    return data.split(b"\r\n", 1)[0]


def head(method: bytes, path: bytes, authorization: bytes, body: bytes) -> bytes:
    return (
        method + b" " + path + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Authorization: " + authorization + b"\r\n"
        b"Content-Type: application/json\r\nContent-Length: "
        + str(len(body)).encode() + b"\r\n\r\n"
    )  # fmt: skip


@pytest.fixture(
    params=[({}, "text"), ({}, "json")],
    ids=["text", "json"],
)
def serve(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Serve]:
    env, log_format = request.param
    token_file = tmp_path / "token"
    token_file.write_bytes(TOKEN.encode() + b"\r\n")  # written on Windows, sent as is
    server = Serve(tmp_path, token_file, {**env, "SESSIONQ_LOG_FORMAT": log_format})
    try:
        yield server
    finally:
        server.stop()


def test_no_authorization_value_reaches_the_log(serve: Serve) -> None:
    body = b'{"tool":"session_trace","arguments":{}}'
    token = TOKEN.encode()
    ok = raw_request(serve.port, head(b"GET", b"/v1/status", b"Bearer " + token, b""))
    assert ok.startswith(b"HTTP/1.1 200"), ok  # the file's CR/LF is not part of the token
    for method, path, payload in ((b"GET", b"/v1/status", b""), (b"POST", b"/v1/call", body)):
        for tail in TAILS:
            for value in (b"Bearer " + token + tail, b"Bearer " + tail + token):
                status = raw_request(serve.port, head(method, path, value, payload), payload)
                assert re.match(rb"HTTP/1\.[01] 4\d\d ", status), (value, status)
    time.sleep(0.5)  # the last refusal's log line
    log = serve.log()
    assert TOKEN not in log
    assert TOKEN[:12] not in log  # not even a piece of it
    assert "Traceback" not in log
    assert "Invalid HTTP request received" in log, log[-3000:]  # the parser's refusals
