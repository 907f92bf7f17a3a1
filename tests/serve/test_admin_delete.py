"""Erasure in embedded mode, on a real ``serve``: the authenticated admin endpoint (and
``sessionq delete --url``) deletes sessions and purges the data dir's files; without a
token the endpoint refuses; ``--retain-days`` deletes sessions past it."""

from __future__ import annotations

import asyncio
import json
import random
import time
from pathlib import Path
from typing import Any

import pytest

from tests.builders import header, user
from tests.erasure_scan import marker, scan
from tests.fixtures.serve import eventually, running_embedded
from worker.cli.main import main
from worker.devtools.demo_corpus.layout import session_path
from worker.transports.http.admin import DELETE_PATH

TOKEN = "admin-token-for-tests"
DAY_MS = 24 * 3600 * 1000


def write_session(root: Path, sid: str, text: str, t0: int) -> Path:
    cwd = f"/w/{sid}"
    path = root / session_path(cwd, sid)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"type": "session", **header(sid, cwd=cwd, created_at=t0)})]
    lines += [json.dumps(user(s, f"{text} line {s}", time=t0 + s * 1000)) for s in range(5)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def markers() -> tuple[str, str]:
    rng = random.Random(23)
    first = marker(rng)
    return first, marker(rng, avoid=[first])


def auth(token: str = TOKEN) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def test_admin_delete_erases_and_reports_each_id(
    tmp_path: Path, markers: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    gone, kept = markers
    root, data = tmp_path / "root", tmp_path / "data"
    now = int(time.time() * 1000)
    write_session(root, "victim", gone, now)
    write_session(root, "keeper", kept, now)
    async with running_embedded(root, data, token=TOKEN) as (embedded, base, http):
        assert scan(data, [gone.encode()])[gone.encode()]
        body = {"session_ids": ["victim", "nobody"]}
        async with http.post(base + DELETE_PATH, json=body) as resp:
            assert resp.status == 401  # the token guard comes first
        async with http.post(base + DELETE_PATH, json={"ids": []}, headers=auth()) as resp:
            assert resp.status == 400
        async with http.post(base + DELETE_PATH, json=body, headers=auth()) as resp:
            assert resp.status == 200, await resp.text()
            answer: dict[str, Any] = await resp.json()
        assert answer["results"] == [
            {"session_id": "victim", "outcome": "deleted"},
            {"session_id": "nobody", "outcome": "unknown"},
        ]
        assert answer["purge"]["complete"] is True
        registry = embedded.metrics.registry
        assert (registry.get_sample_value("sessionq_purge_seconds_count") or 0) >= 1
        assert registry.get_sample_value("sessionq_purge_pending") == 0
        assert embedded.service.get_session("victim") is None
        found = scan(data, [gone.encode(), gone.lower().encode(), kept.encode()])
        assert found[kept.encode()], "the control must be found"
        assert not found[gone.encode()] and not found[gone.lower().encode()], found

        token_file = tmp_path / "token"
        token_file.write_text(TOKEN + "\n")
        argv = ["delete", "keeper", "victim", "--url", base, "--token-file", str(token_file)]
        assert await asyncio.to_thread(main, argv) == 0
        out = capsys.readouterr().out.splitlines()
        assert out[:2] == ["keeper: deleted", "victim: unknown (not in the data dir)"]
        assert embedded.service.get_session("keeper") is None
        await asyncio.sleep(0.2)  # a few watcher scans: an unchanged log is not read again
        assert embedded.service.get_session("keeper") is None


async def test_admin_delete_is_refused_without_a_token(tmp_path: Path) -> None:
    root, data = tmp_path / "root", tmp_path / "data"
    write_session(root, "s1", "some words", int(time.time() * 1000))
    async with running_embedded(root, data) as (embedded, base, http):
        body = {"session_ids": ["s1"]}
        async with http.post(base + DELETE_PATH, json=body) as resp:
            assert resp.status == 403
            assert (await resp.json())["error"]["code"] == "ADMIN_DISABLED"
        assert embedded.service.get_session("s1") is not None


async def test_retain_days_deletes_sessions_past_it(
    tmp_path: Path, markers: tuple[str, str]
) -> None:
    old_text, new_text = markers
    root, data = tmp_path / "root", tmp_path / "data"
    now = int(time.time() * 1000)
    write_session(root, "old", old_text, now - 45 * DAY_MS)
    write_session(root, "new", new_text, now - 2 * DAY_MS)
    options = {"retain_days": 30, "retention_check_s": 0.05}
    async with running_embedded(root, data, **options) as (embedded, _, _):

        async def erased() -> bool:
            source = embedded.local.source
            assert source is not None
            gone = embedded.service.get_session("old") is None and source.housekeeping.expired == 1
            return gone and not scan(data, [old_text.encode()])[old_text.encode()]

        await eventually(erased, timeout=20, what="the old session to be deleted and purged")
        assert embedded.service.get_session("new") is not None
        assert scan(data, [new_text.encode()])[new_text.encode()]
