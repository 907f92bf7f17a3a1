"""The embedded server follows the session logs while serving: appends, new logs, deleted
logs and broken appends (polled, never slept on)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import quote

from indexer.logs.reader import read_log
from tests.fixtures.serve import Served, call_body, eventually
from worker.devtools.demo_corpus import DemoSession, encode_segment, project_key

WITHIN_S = 60.0  # generous: how soon is bench/bench_watcher.py's question, not a test's


def user_event(seq: int, text: str) -> dict[str, Any]:
    return {
        "type": "user/message",
        "seq": seq,
        "time": 1_780_000_000_000 + seq,
        "data": {
            "content": [{"type": "text", "text": text}],
            "source": {"kind": "user"},
            "role": "user",
            "id": str(uuid.uuid4()),
        },
        "surfaceOp": "append",
    }


def append(path: Path, event: dict[str, Any]) -> None:
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(event, ensure_ascii=False, separators=(",", ":")) + "\n")


def next_seq(path: Path) -> int:
    return len(read_log(path).events)


async def search(served: Served, caller: str, query: str) -> str:
    reply = await served.call(call_body("session_search", {"query": query}, caller))
    assert reply["ok"] is True, reply
    text: str = reply["text"]
    return text


def pick(served: Served, scenario: str) -> DemoSession:
    return served.summary.find(scenario)


async def test_an_appended_event_is_searchable_within_a_second(served: Served) -> None:
    target, caller = pick(served, "pay-reconcile-timeout"), pick(served, "pay-webhook-retry")
    path = served.summary.root / target.path
    assert "No prior" in await search(served, caller.id, "quokka")  # no log holds it yet
    seq = next_seq(path)
    append(path, user_event(seq, "月底又出现 quokka ledger drift，请再查一次。"))

    async def found() -> bool:
        return target.id in await search(served, caller.id, "quokka")

    await eventually(found, timeout=WITHIN_S, what="appended event searchable")
    # The appended event is readable exactly as written.
    reply = await served.call(
        call_body("session_event_read", {"session_id": target.id, "seq": seq}, caller.id)
    )
    assert reply["ok"] is True, reply
    assert "quokka ledger drift" in reply["text"]


async def test_a_new_session_log_appears_within_a_second(served: Served) -> None:
    caller = pick(served, "ml-pydantic-v2")
    cwd = "/home/dev/ml-pipeline"
    sid = "new session/α"  # an id that needs encoding in the folder name
    path = served.summary.root / project_key(cwd) / encode_segment(sid) / "session.jsonl"
    path.parent.mkdir(parents=True)
    header = {"type": "session", "version": 0, "id": sid, "createdAt": 1_780_000_000_000,
              "cwd": cwd, "delegationDepth": 0}
    path.write_text(json.dumps(header) + "\n", encoding="utf-8")
    append(path, user_event(0, "Tune the okapi sampler for the nightly feature build"))

    async def listed() -> bool:
        sessions = await served.get_json(f"/v1/sessions?caller={quote(caller.id)}")
        return any(s["id"] == sid for s in sessions)

    await eventually(listed, timeout=WITHIN_S, what="new session listed")

    async def found() -> bool:
        return sid in await search(served, caller.id, "okapi sampler")

    await eventually(found, timeout=WITHIN_S, what="new session searchable")


async def test_a_deleted_log_takes_its_session_away(served: Served) -> None:
    target, caller = pick(served, "ml-airflow-backfill"), pick(served, "ml-pydantic-v2")
    assert target.id in await search(served, caller.id, "ds_nodash")
    (served.summary.root / target.path).unlink()

    trace = call_body("session_trace", {"session_id": target.id}, caller.id)

    async def gone() -> bool:
        # The store commits the index before the session rows (a crash between is
        # repaired from the rows): the search may miss the session while its row is
        # still there, so both sides are waited for.
        text = await search(served, caller.id, "ds_nodash")
        return text == "No prior session matches found." and not (await served.call(trace))["ok"]

    await eventually(gone, timeout=WITHIN_S, what="deleted session no longer found")
    reply = await served.call(trace)
    assert reply["ok"] is False
    assert reply["error"]["code"] == "SESSION_QUERY_TOOL_UNAUTHORIZED"
    sessions = await served.get_json(f"/v1/sessions?caller={quote(caller.id)}")
    assert target.id not in {s["id"] for s in sessions}


async def test_a_broken_append_is_reported_and_other_updates_go_on(served: Served) -> None:
    broken, healthy = pick(served, "shop-search-pagination"), pick(served, "shop-react-router")
    caller = pick(served, "shop-cart-rounding")
    broken_path = served.summary.root / broken.path
    append(broken_path, user_event(next_seq(broken_path) + 5, "seq gap narwhal"))

    async def rejected() -> str | None:
        status = await served.get_json("/v1/status")
        for path, reason in status["rejected_files"].items():
            if Path(path) == broken_path:
                return str(reason)
        return None

    reason = await eventually(rejected, timeout=WITHIN_S, what="broken log reported")
    assert "not contiguous" in reason

    healthy_path = served.summary.root / healthy.path
    pangolin = "checkout still shows the pangolin banner"
    append(healthy_path, user_event(next_seq(healthy_path), pangolin))

    async def found() -> bool:
        return healthy.id in await search(served, caller.id, "pangolin banner")

    await eventually(found, timeout=WITHIN_S, what="update to another log applied")
    # What was applied before the broken line stays searchable.
    assert broken.id in await search(served, caller.id, "search_after")
    assert "No prior" in await search(served, caller.id, "seq gap narwhal")
