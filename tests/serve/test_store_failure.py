"""``serve`` over a data dir whose store cannot start answers every call with the cause,
at once, as ``/v1/status`` shows it, instead of answering from a store it cannot keep
up to date (or, over MCP, waiting for a readiness that never comes)."""

from __future__ import annotations

from pathlib import Path

import aiohttp

from tests.data_dirs import unstartable_data_dir
from tests.data_paths import CORPUS_DIR
from tests.fixtures.serve import call_body, embedded_service, eventually, running_embedded
from worker.transports.http.api import HttpApi

LOG = CORPUS_DIR / "examples__acp-agent__bash-tool-turn__session.jsonl"
CALLER = "e128dda9-ed11-4868-8266-0ef90d03c3d6"  # the log's own id


async def test_every_call_says_why_the_store_cannot_start(tmp_path: Path) -> None:
    data = unstartable_data_dir(tmp_path / "data")
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / LOG.name).write_bytes(LOG.read_bytes())
    local = embedded_service(logs, data)
    api = HttpApi(local)
    runner, port = await api.start("127.0.0.1:0")
    base = f"http://127.0.0.1:{port}"
    try:
        local.start()
        async with aiohttp.ClientSession() as http:

            async def failing() -> str | None:
                async with http.get(f"{base}/v1/status") as resp:
                    status = await resp.json()
                error: str | None = status["store_error"]
                return error

            cause = await eventually(failing, timeout=60, what="the store to fail")
            for tool, args in (("session_search", {"query": "echo"}), ("session_trace", {})):
                body = call_body(tool, args, CALLER)
                async with http.post(f"{base}/v1/call", json=body) as resp:
                    assert resp.status == 200
                    reply = await resp.json()
                assert reply["ok"] is False
                assert reply["error"]["code"] == "SESSION_QUERY_TOOL_FAILED"
                assert reply["error"]["message"] == f"the session store cannot start: {cause}"
    finally:
        await runner.close()
        await local.stop()
        local.close()


async def test_a_bad_log_beside_good_ones_never_keeps_serve_from_ready(tmp_path: Path) -> None:
    """The 12-byte ``{"type":[]}`` beside good logs made the writer fail every pass
    (``ready: false``, ``store_error: TypeError…`` retried forever); now it is one
    rejected file and the rest is served."""
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / LOG.name).write_bytes(LOG.read_bytes())
    (logs / "zz.jsonl").write_bytes(b'{"type":[]}')
    async with running_embedded(logs, tmp_path / "data") as (_api, base, http):
        async with http.get(f"{base}/v1/status") as resp:
            status = await resp.json()
        assert status["ready"] is True and status["store_error"] is None
        assert status["sessions"] == 1
        assert [r for r in status["rejected_files"].values() if "zz.jsonl:1: " in r], status
        body = call_body("session_trace", {}, CALLER)
        async with http.post(f"{base}/v1/call", json=body) as resp:
            reply = await resp.json()
        assert reply["ok"] is True, reply
