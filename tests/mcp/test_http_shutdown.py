"""``sessionq mcp --transport http`` stops cleanly on SIGTERM, idle or with a client's
session open: exit 0 within the 5 s bound, and nothing on stderr after the URL but the
SDK's own INFO lines: no traceback, no ``CancelledError``, no ERROR. A real process."""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path

import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.data_paths import REPO_ROOT
from tests.mcp.conftest import CALLER, mcp_argv, subprocess_env

EXIT_WITHIN_S = 5.0


@pytest.mark.parametrize("client", ["idle", "a session open"])
async def test_sigterm_stops_the_http_transport_without_a_traceback(
    client: str, corpus_data: Path
) -> None:
    argv = mcp_argv(
        "--transport", "http", "--listen", "127.0.0.1:0", "--data", str(corpus_data),
        "--caller", CALLER,
    )  # fmt: skip
    proc = await asyncio.create_subprocess_exec(
        *argv,
        env=subprocess_env(),
        cwd=str(REPO_ROOT),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stderr is not None
    try:
        url = ""
        async with asyncio.timeout(60):
            while not url:
                line = (await proc.stderr.readline()).decode()
                assert line, f"sessionq mcp exited: {await proc.wait()}"
                if line.startswith("sessionq mcp on "):
                    url = line.removeprefix("sessionq mcp on ").strip()
        if client == "idle":
            proc.send_signal(signal.SIGTERM)
            started = time.monotonic()
            rest = await asyncio.wait_for(proc.stderr.read(), EXIT_WITHIN_S * 2)
        else:
            async with (
                httpx2.AsyncClient() as http,
                streamable_http_client(url, http_client=http) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                await session.list_tools()
                proc.send_signal(signal.SIGTERM)
                started = time.monotonic()
                rest = await asyncio.wait_for(proc.stderr.read(), EXIT_WITHIN_S * 2)
        code = await proc.wait()
        took = time.monotonic() - started
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    text = rest.decode(errors="replace")
    assert code == 0, text
    assert took < EXIT_WITHIN_S, (took, text)
    for word in ("Traceback", "CancelledError", "ERROR", "stopping now"):
        assert word not in text, text
