"""The console's own reads of ``sessionq serve``: ``/v1/callers`` (candidate callers of the
whole store, bounded, in the order ``sessionq mcp`` discovers a caller), the fields
``/v1/sessions`` adds for browsing, the page's static files (open, fixed, under a
Content-Security-Policy) and the playground's default query against the demo corpus."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import shlex
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import aiohttp
import pytest

from indexer.model.records import HeaderRecord, LifecycleRecord
from indexer.query.service import StoreQueryService
from indexer.store.records.store import Store
from tests.builders import BASE_TIME, header
from tests.fixtures.serve import Served, call_body, running_embedded
from worker.devtools.demo_corpus import DemoSummary, print_examples
from worker.devtools.demo_corpus.summary import SUMMARY_FILE
from worker.local_service import LocalService
from worker.transports.http.api import HttpApi
from worker.transports.http.console_api import MAX_CALLERS
from worker.transports.http.console_page import ASSETS, CONTENT_SECURITY_POLICY

CONSOLE = Path(__file__).resolve().parents[2] / "worker" / "transports" / "http" / "console"
MINUTE = 60_000


def build_store(data: Path, records: list[Any]) -> None:
    store = Store(data)
    try:
        for record in records:
            store.apply(record)
        store.commit()
    finally:
        store.close()


def head(sid: str, minutes: int, **fields: Any) -> HeaderRecord:
    return HeaderRecord(
        v=1, kind="header", header=header(sid, created_at=BASE_TIME + minutes * MINUTE, **fields)
    )


def live(sid: str) -> LifecycleRecord:
    return LifecycleRecord(v=1, kind="lifecycle", session_id=sid, live=True)


@contextlib.asynccontextmanager
async def api_over(data: Path) -> AsyncIterator[tuple[str, aiohttp.ClientSession]]:
    """The HTTP API over a store built beforehand (no watched logs)."""
    local = LocalService(data, role="serve")
    runner, port = await HttpApi(local).start("127.0.0.1:0")
    try:
        local.start()
        async with aiohttp.ClientSession() as http:
            yield f"http://127.0.0.1:{port}", http
    finally:
        await runner.close()
        await local.stop()
        local.close()


async def get(http: aiohttp.ClientSession, url: str) -> Any:
    async with http.get(url) as resp:
        assert resp.status == 200, await resp.text()
        return await resp.json()


# ---- /v1/callers --------------------------------------------------------------------------------
async def test_callers_put_live_main_sessions_first(tmp_path: Path) -> None:
    data = tmp_path / "data"
    build_store(
        data,
        [
            head("main-old-live", 1, cwd="/ws/a"),
            head("main-new-closed", 5, cwd="/ws/b"),
            head("main-mid-closed", 3, cwd=None),
            head("main-new-live", 4, cwd="/ws/a"),
            head("sub-newest-live", 9, cwd="/ws/a", parent="main-old-live"),
            head("sub-closed", 8, cwd="/ws/b", parent="main-new-closed"),
            head("tie-a", 2, cwd="/ws/c"),
            head("tie-b", 2, cwd="/ws/c"),
            live("main-old-live"),
            live("main-new-live"),
            live("sub-newest-live"),
        ],
    )
    async with api_over(data) as (base, http):
        body = await get(http, f"{base}/v1/callers")
    assert [c["id"] for c in body["callers"]] == [
        "main-new-live",  # main and live, newest first
        "main-old-live",
        "main-new-closed",  # then closed main sessions, newest first, ties by greater id
        "main-mid-closed",
        "tie-b",
        "tie-a",
        "sub-newest-live",  # subagents last, live first
        "sub-closed",
    ]
    assert body["more"] is False
    first = body["callers"][0]
    assert first == {
        "id": "main-new-live",
        "cwd": "/ws/a",
        "title": None,
        "source_agent": "dsh",
        "created_at": BASE_TIME + 4 * MINUTE,
        "live": True,
        "subagent": False,
    }
    sub = next(c for c in body["callers"] if c["id"] == "sub-closed")
    assert sub["subagent"] is True and sub["live"] is False
    # One order for the page's default and for sessionq mcp's discovery
    # (worker.transports.mcp.binding).
    from worker.transports.mcp.binding import newest_in

    service = StoreQueryService(data)
    try:
        found = newest_in(service.filter_sessions([]))
        assert found is not None
        assert [r.header.id for r in service.recent_sessions(1)] == [found.header.id]
    finally:
        service.close()


async def test_callers_are_bounded(tmp_path: Path) -> None:
    data = tmp_path / "data"
    build_store(data, [head(f"s{i:04d}", i, cwd=f"/ws/{i % 7}") for i in range(MAX_CALLERS + 5)])
    async with api_over(data) as (base, http):
        body = await get(http, f"{base}/v1/callers")
    assert len(body["callers"]) == MAX_CALLERS
    assert body["more"] is True
    assert body["callers"][0]["id"] == f"s{MAX_CALLERS + 4:04d}"  # the newest


async def test_an_empty_store_has_no_callers(tmp_path: Path) -> None:
    data = tmp_path / "data"
    build_store(data, [])
    async with api_over(data) as (base, http):
        assert await get(http, f"{base}/v1/callers") == {"callers": [], "more": False}


async def test_the_demo_default_caller_is_its_newest_main_session(served: Served) -> None:
    demo = served.summary
    body = await served.get_json("/v1/callers")
    newest_main = max((s for s in demo.sessions if not s.subagent), key=lambda s: s.created_at)
    assert body["callers"][0]["id"] == newest_main.id
    assert body["callers"][0]["title"] == newest_main.title
    assert {c["id"] for c in body["callers"]} == {s.id for s in demo.sessions}
    subagents = [c for c in body["callers"] if c["subagent"]]
    assert body["callers"][-len(subagents) :] == subagents


# ---- /v1/sessions: what browsing needs --------------------------------------------------------
async def test_sessions_carry_availability_and_the_last_seq(served: Served) -> None:
    demo = served.summary
    caller = demo.find("pay-webhook-retry")
    listed = await served.get_json(f"/v1/sessions?caller={quote(caller.id)}")
    by_id = {s["id"]: s for s in listed}
    for s in demo.sessions:
        if s.cwd == caller.cwd:
            assert by_id[s.id]["last_seq"] == s.events - 1, s.scenario
            assert by_id[s.id]["live"] is False
    # The last seq is readable, the one after it is not: the page pages up to it.
    idem = demo.find("pay-idempotency")
    last = by_id[idem.id]["last_seq"]
    ok = await served.call(
        call_body("session_event_read", {"session_id": idem.id, "seq": last}, caller.id)
    )
    assert ok["ok"] is True
    past = await served.call(
        call_body("session_event_read", {"session_id": idem.id, "seq": last + 1}, caller.id)
    )
    assert past["ok"] is False


# ---- the page and its files ---------------------------------------------------------------------
async def test_the_page_and_its_files_carry_the_security_policy(served: Served) -> None:
    for path in ["/", *(f"/console/{name}" for name in ASSETS)]:
        async with served.http.get(f"{served.base}{path}") as resp:
            assert resp.status == 200, path
            assert resp.headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
            assert resp.headers["X-Content-Type-Options"] == "nosniff"
            text = await resp.text()
        expected = "text/html" if path == "/" else ASSETS[path.rsplit("/", 1)[1]]
        assert resp.content_type == expected, path
        assert "http://" not in text and "https://" not in text, path  # nothing external
    assert "script-src 'self'" in CONTENT_SECURITY_POLICY
    assert "unsafe-inline" not in CONTENT_SECURITY_POLICY


async def test_only_the_listed_files_are_served(served: Served) -> None:
    on_disk = {p.name for p in CONSOLE.iterdir() if p.suffix in (".js", ".css")}
    assert on_disk == set(ASSETS)  # every file the page loads is listed, and nothing else
    for path in (
        "/console/index.html",
        "/console/__init__.py",
        "/console/..%2Fapi.py",
        "/console/%2e%2e/api.py",
        "/console/nope.js",
    ):
        async with served.http.get(f"{served.base}{path}") as resp:
            assert resp.status == 404, path


def test_the_page_builds_no_markup_from_text() -> None:
    """Tool answers quote session logs: the scripts never hand a string to the HTML
    parser (the Chromium test runs the same rule against a hostile log)."""
    sinks = re.compile(
        r"innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function"
    )
    for name in ASSETS:
        text = (CONSOLE / name).read_text(encoding="utf-8")
        assert not sinks.findall(text), name


# ---- the playground's default query -------------------------------------------------------------
def default_query() -> str:
    text = (CONSOLE / "playground.js").read_text(encoding="utf-8")
    match = re.search(r'export const DEFAULT_QUERY = "([^"]+)";', text)
    assert match, "playground.js names its DEFAULT_QUERY"
    return match.group(1)


async def test_the_default_query_finds_sessions_in_every_demo_workspace(served: Served) -> None:
    demo: DemoSummary = served.summary
    query = default_query()
    for cwd in demo.workspaces:
        caller = max((s for s in demo.sessions if s.cwd == cwd), key=lambda s: s.created_at)
        reply = await served.call(call_body("session_search", {"query": query}, caller.id))
        assert reply["ok"] is True, (cwd, reply)
        assert reply["text"].startswith("Session search results ("), (cwd, reply["text"])


async def test_examples_for_a_real_root_start_from_the_console_caller(
    demo: DemoSummary, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``make run SESSIONS=…`` on a root that is no demo: the printed calls use the caller
    the console opens with, and each of them answers."""
    (demo.root / SUMMARY_FILE).unlink()
    async with running_embedded(demo.root, tmp_path / "data") as (_, base, http):
        await asyncio.to_thread(print_examples, base, [demo.root])
        lines = capsys.readouterr().out.splitlines()
        assert lines[0] == f"sessionq console: {base}/"
        bodies = [json.loads(shlex.split(line)[-1]) for line in lines if line.startswith("curl ")]
        assert len(bodies) >= 2
        newest = max((s for s in demo.sessions if not s.subagent), key=lambda s: s.created_at)
        for body in bodies:
            assert body["caller"] == {"session_id": newest.id}
            async with http.post(f"{base}/v1/call", json=body) as resp:
                reply = await resp.json()
            assert reply["ok"] is True, (body, reply)
