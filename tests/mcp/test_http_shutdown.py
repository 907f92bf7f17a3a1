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

from tests.fixtures.mcp import CALLER
from tests.mcp.http_process import start_http

EXIT_WITHIN_S = 5.0


@pytest.mark.parametrize("client", ["idle", "a session open"])
async def test_sigterm_stops_the_http_transport_without_a_traceback(
    client: str, corpus_data: Path
) -> None:
    args = ("--data", str(corpus_data), "--caller", CALLER)
    proc, url = await start_http(*args)
    assert proc.stderr is not None
    try:
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
