"""Fixtures for the embedded server tests: a demo corpus in tmp and the HTTP API of
``serve`` over a ``LocalService`` in-process on an ephemeral port (first pass done, the
local source watching the logs)."""

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

from indexer.logs.importers.detect import LogFormat
from indexer.logs.watch import WatchRoot
from worker.devtools.demo_corpus import DemoSummary, write_demo_corpus
from worker.http.api import HttpApi
from worker.local_service import LocalService

T = TypeVar("T")
POLL_S = 0.05
DEMO_SESSIONS = 24


@dataclass
class Served:
    base: str
    http: aiohttp.ClientSession
    summary: DemoSummary
    embedded: HttpApi

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


def embedded_service(
    root: Path, data: Path, *, log_format: LogFormat | None = None, **options: Any
) -> LocalService:
    """The ``LocalService`` ``serve`` runs over ``root`` (``options``: e.g. ``retain_days``)."""
    return LocalService(data, [WatchRoot(root.resolve(), log_format)], role="serve", **options)


@contextlib.asynccontextmanager
async def running_embedded(
    root: Path, data: Path, *, token: str | None = None, **options: Any
) -> AsyncIterator[tuple[HttpApi, str, aiohttp.ClientSession]]:
    """A real ``serve`` over ``root`` on a loopback port, its first pass done and its
    local source watching; yields the API, its base URL and an HTTP session; stopped and
    closed on exit. ``options`` go to ``LocalService`` (e.g. ``retain_days``)."""
    local = embedded_service(root, data, **options)
    api = HttpApi(local, token=token)
    runner, port = await api.start("127.0.0.1:0")
    try:
        local.start()
        assert await local.wait_ready(60), "the first pass did not finish"
        async with aiohttp.ClientSession() as http:
            yield api, f"http://127.0.0.1:{port}", http
    finally:
        await runner.cleanup()
        await local.stop()
        local.close()


@pytest.fixture
async def served(demo: DemoSummary, tmp_path: Path) -> AsyncIterator[Served]:
    async with running_embedded(demo.root, tmp_path / "data") as (embedded, base, http):
        yield Served(base, http, demo, embedded)
