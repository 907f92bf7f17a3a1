"""The embedded HTTP API (``sessionq serve``) end to end, in-process on an ephemeral port."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from tests.data_paths import UPSTREAM_TOOL_SCHEMAS
from tests.fixtures.serve import Served, call_body, embedded_service
from worker.devtools.demo_corpus import DemoSummary, example_calls
from worker.transports.http.api import HttpApi


def ids(demo: DemoSummary) -> dict[str, str]:
    idem = demo.find("pay-idempotency")
    return {
        "idem": idem.id,
        "child": next(s.id for s in demo.subagents if s.parent == idem.id),
        "payments": demo.find("pay-webhook-retry").id,
        "shop": demo.find("shop-cart-rounding").id,
        "flaky": demo.find("shop-flaky-parser").id,
    }


async def test_each_tool_answers(served: Served) -> None:
    demo = served.summary
    i = ids(demo)
    compaction = demo.find("pay-idempotency").compaction_seq
    assert compaction is not None
    cases: list[tuple[str, dict[str, Any], list[str]]] = [
        ("session_search", {"query": "幂等性"}, ["Session search results (", i["idem"]]),
        (
            "session_event_search",
            {"session_id": i["idem"], "query": "ensure_idempotent"},
            [f"Session {i['idem']} — 修复支付回调的幂等性问题", "Event search results ("],
        ),
        (
            "session_trace",
            {"session_id": i["child"]},
            ["Ancestors (nearest first):", f"- {i['idem']} — 修复支付回调的幂等性问题"],
        ),
        (
            "session_event_trace",
            {"session_id": i["idem"], "seq": compaction},
            [f"Target: seq {compaction} | assistant/message | current |", "Replaced by: none"],
        ),
        (
            "session_event_read",
            {"session_id": i["idem"], "seq": compaction, "before": 1, "after": 1},
            [f"Target event seq {compaction}:", '"op": "replace"', "Before:", "After:"],
        ),
    ]
    for tool, arguments, expected in cases:
        reply = await served.call(call_body(tool, arguments, i["payments"], id=f"req-{tool}"))
        assert reply["ok"] is True, reply
        assert reply["id"] == f"req-{tool}"
        assert reply["v"] == 1
        for fragment in expected:
            assert fragment in reply["text"], (tool, fragment, reply["text"])


async def test_printed_examples_have_hits(served: Served) -> None:
    for example in example_calls(served.summary):
        reply = await served.call(example.body)
        assert reply["ok"] is True, (example.label, reply)
        assert example.expect in reply["text"], (example.label, reply["text"])
        assert not reply["text"].startswith("No prior")


async def test_bad_json_is_400_with_a_message(served: Served) -> None:
    async with served.http.post(
        f"{served.base}/v1/call", data=b"{not json", headers={"content-type": "application/json"}
    ) as resp:
        assert resp.status == 400
        body = await resp.json()
    assert body["error"]["code"] == "BAD_REQUEST"
    assert "JSON" in body["error"]["message"]


async def test_missing_tool_is_400_naming_it(served: Served) -> None:
    async with served.http.post(
        f"{served.base}/v1/call", json={"arguments": {}, "caller": {"session_id": "x"}}
    ) as resp:
        assert resp.status == 400
        body = await resp.json()
    assert body["error"]["code"] == "BAD_REQUEST"
    assert "tool" in body["error"]["message"]


async def test_unknown_tool_is_404(served: Served) -> None:
    async with served.http.post(
        f"{served.base}/v1/call", json=call_body("session_delete", {}, "x")
    ) as resp:
        assert resp.status == 404
        body = await resp.json()
    assert body["error"]["code"] == "UNKNOWN_TOOL"
    assert "session_delete" in body["error"]["message"]


async def test_foreign_workspace_target_is_unauthorized(served: Served) -> None:
    i = ids(served.summary)
    reply = await served.call(call_body("session_trace", {"session_id": i["flaky"]}, i["payments"]))
    assert reply["ok"] is False
    assert reply["error"] == {
        "code": "SESSION_QUERY_TOOL_UNAUTHORIZED",
        "message": "session target is outside the caller workspace",
    }
    assert "text" not in reply


async def test_unmet_min_seq_times_out(served: Served) -> None:
    i = ids(served.summary)
    body = call_body("session_search", {"query": "支付"}, i["payments"], timeout_ms=1)
    body["caller"]["min_seq"] = 10**9
    reply = await served.call(body)
    assert reply["ok"] is False
    assert reply["error"]["code"] == "TOOL_TIMEOUT"
    assert reply["error"]["message"] == "tool call timed out after 1ms"


async def test_readyz_turns_200_after_the_first_pass(demo: DemoSummary, tmp_path: Path) -> None:
    local = embedded_service(demo.root, tmp_path / "data")
    runner, port = await HttpApi(local).start("127.0.0.1:0")
    base = f"http://127.0.0.1:{port}"
    try:
        async with aiohttp.ClientSession() as http:
            async with http.get(f"{base}/readyz") as resp:
                assert resp.status == 503
                assert (await resp.json()) == {"ready": False}
            async with http.get(f"{base}/healthz") as resp:
                assert resp.status == 200
            async with http.get(f"{base}/v1/status") as resp:
                assert (await resp.json())["ready"] is False
            local.start()
            assert await local.wait_ready(60)
            async with http.get(f"{base}/readyz") as resp:
                assert resp.status == 200
                assert (await resp.json()) == {"ready": True}
    finally:
        await runner.close()
        await local.stop()
        local.close()


async def test_manifest_tools_equal_the_upstream_schemas(served: Served) -> None:
    upstream = json.loads(UPSTREAM_TOOL_SCHEMAS.read_text(encoding="utf-8"))
    manifest = await served.get_json("/v1/manifest")
    ours = [
        {"name": t["name"], "description": t["description"], "parameters": t["parameters"]}
        for t in manifest["tools"]
    ]
    assert ours == upstream["tools"]


def request_counts(metrics_text: str) -> dict[tuple[str, str], float]:
    out: dict[tuple[str, str], float] = {}
    for family in text_string_to_metric_families(metrics_text):
        for sample in family.samples:
            if sample.name == "sessionq_requests_total":
                out[(sample.labels["tool"], sample.labels["outcome"])] = sample.value
    return out


async def test_metrics_count_calls(served: Served) -> None:
    async def counts() -> dict[tuple[str, str], float]:
        async with served.http.get(f"{served.base}/metrics") as resp:
            assert resp.status == 200
            return request_counts(await resp.text())

    i = ids(served.summary)
    before = await counts()
    for _ in range(2):
        assert (await served.call(call_body("session_search", {"query": "幂等性"}, i["payments"])))[
            "ok"
        ]
    await served.call(call_body("session_trace", {"session_id": i["flaky"]}, i["payments"]))
    after = await counts()
    ok = ("session_search", "ok")
    denied = ("session_trace", "SESSION_QUERY_TOOL_UNAUTHORIZED")
    assert after[ok] == before.get(ok, 0) + 2
    assert after[denied] == before.get(denied, 0) + 1


async def test_status_sessions_and_console(served: Served) -> None:
    demo = served.summary
    status = await served.get_json("/v1/status")
    assert status["ready"] is True
    assert status["sessions"] == len(demo.sessions)
    assert status["events"] == demo.events
    assert status["documents"] > 0
    assert status["rejected_files"] == {}
    assert {"last_applied_at", "lag"} <= status.keys()

    payments = ids(demo)["payments"]
    sessions = await served.get_json(f"/v1/sessions?caller={quote(payments)}")
    workspace = {s.id for s in demo.sessions if s.cwd == "/home/dev/payments-api"}
    assert {s["id"] for s in sessions} == workspace
    child = next(s for s in sessions if s["id"] == ids(demo)["child"])
    assert child["parent"] == ids(demo)["idem"]
    assert child["cwd"] == "/home/dev/payments-api"
    assert isinstance(child["last_step_seq"], int)
    assert {"title", "created_at"} <= child.keys()

    async with served.http.get(f"{served.base}/") as resp:
        assert resp.status == 200
        assert resp.content_type == "text/html"
        page = await resp.text()
    for element in ('id="status"', 'id="caller"', 'id="tool"', 'id="arguments"', 'id="run"',
                    'id="output"'):
        assert element in page
    assert "http://" not in page and "https://" not in page  # no external resources
