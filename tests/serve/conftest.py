"""Fixtures for the embedded server tests: a demo corpus in tmp and ``Embedded`` serving it
in-process on an ephemeral port (initial ingest done, the log watcher polling)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import aiohttp
import pytest

from worker.devtools.demo_corpus import DemoSummary, write_demo_corpus
from worker.http.embedded import Embedded
from worker.http.ops import start_server

T = TypeVar("T")
POLL_S = 0.05
DEMO_SESSIONS = 24


@dataclass
class Served:
    base: str
    http: aiohttp.ClientSession
    summary: DemoSummary
    embedded: Embedded

    async def call(self, body: Any) -> dict[str, Any]:
        """``POST /v1/call`` that must answer 200; returns the reply envelope."""
        async with self.http.post(f"{self.base}/v1/call", json=body) as resp:
            assert resp.status == 200, await resp.text()
            reply: dict[str, Any] = await resp.json()
            return reply

    async def get_json(self, path: str) -> Any:
        async with self.http.get(f"{self.base}{path}") as resp:
            assert resp.status == 200, await resp.text()
            return await resp.json()


def call_body(tool: str, arguments: dict[str, Any], caller: str, **extra: Any) -> dict[str, Any]:
    return {"tool": tool, "arguments": arguments, "caller": {"session_id": caller}, **extra}


async def eventually(
    probe: Callable[[], Awaitable[T | None]], *, timeout: float, what: str
) -> T:
    """Poll ``probe`` until it returns something other than ``None``/``False``."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while True:
        last = await probe()
        if last is not None and last is not False:
            return last
        if time.monotonic() >= deadline:
            raise AssertionError(f"not within {timeout:.1f} s: {what} (last probe: {last!r})")
        await asyncio.sleep(POLL_S / 2)


@pytest.fixture
def demo(tmp_path: Path) -> DemoSummary:
    return write_demo_corpus(tmp_path / "sessions", DEMO_SESSIONS, seed=7)


@contextlib.asynccontextmanager
async def running_embedded(
    root: Path, data: Path, *, token: str | None = None, **options: Any
) -> AsyncIterator[tuple[Embedded, str, aiohttp.ClientSession]]:
    """A real ``serve`` over ``root`` on a loopback port, ingested and watching; yields
    the app, its base URL and an HTTP session; stopped and closed on exit. ``options``
    go to ``Embedded`` (e.g. ``retain_days``)."""
    embedded = Embedded([root], data, token=token, **options)
    runner, port = await start_server(embedded.app(), "127.0.0.1:0")
    watcher: asyncio.Task[None] | None = None
    try:
        await embedded.initial_ingest()
        watcher = asyncio.create_task(embedded.watch(POLL_S))
        async with aiohttp.ClientSession() as http:
            yield embedded, f"http://127.0.0.1:{port}", http
    finally:
        if watcher is not None:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
        await runner.cleanup()
        # A cancelled scan may still be applying in a worker thread: let it finish first.
        await asyncio.get_running_loop().shutdown_default_executor()
        embedded.close()


@pytest.fixture
async def served(demo: DemoSummary, tmp_path: Path) -> AsyncIterator[Served]:
    async with running_embedded(demo.root, tmp_path / "data") as (embedded, base, http):
        yield Served(base, http, demo, embedded)
