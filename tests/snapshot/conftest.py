"""Snapshot test fixtures: stores built the way the indexer builds them, and a real
S3-compatible server (moto's server mode, a subprocess on a free port) for the S3 tests.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from pydantic import SecretStr

from indexer.settings import S3Settings

pytest.importorskip("moto", reason="moto[server] (test extra) is the S3-compatible server")


@dataclass(frozen=True)
class S3Server:
    endpoint: str
    process: subprocess.Popen[bytes]

    def settings(self) -> S3Settings:
        return S3Settings(
            s3_endpoint=self.endpoint,
            s3_region="us-east-1",
            s3_access_key_id="sessionq-test",
            s3_secret_access_key=SecretStr("sessionq-test-secret"),
        )

    def env(self) -> dict[str, str]:
        """The same settings as ``SESSIONQ_S3_*`` variables (what the CLI reads)."""
        return {
            "SESSIONQ_S3_ENDPOINT": self.endpoint,
            "SESSIONQ_S3_REGION": "us-east-1",
            "SESSIONQ_S3_ACCESS_KEY_ID": "sessionq-test",
            "SESSIONQ_S3_SECRET_ACCESS_KEY": "sessionq-test-secret",
        }

    def create_bucket(self) -> str:
        """A fresh bucket (moto takes an unsigned ``PUT /bucket``)."""
        name = f"sessionq-{uuid.uuid4().hex[:10]}"
        request = urllib.request.Request(f"{self.endpoint}/{name}", method="PUT")
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.status == 200
        return name


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """``python -m moto.server`` on a free loopback port, stopped at the end."""
    port = _free_port()
    log = tmp_path_factory.mktemp("moto") / "moto.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    endpoint = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=2):
                    break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"moto server did not start: {log.read_text()[-2000:]}")
                time.sleep(0.2)
        yield S3Server(endpoint, process)
    finally:
        process.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(10)
        if process.poll() is None:
            process.kill()
            process.wait(5)


@pytest.fixture
def s3_bucket(s3_server: S3Server) -> str:
    return s3_server.create_bucket()


def corrupt(path: Path) -> None:
    """Flip one byte in the middle of a file."""
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
