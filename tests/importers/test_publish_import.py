"""``sessionq publish --follow`` on a Claude Code and a Codex tree, against a real broker:
every session (subagents with their parent link and the source-agent tag) reaches the
indexed store, and a record appended to a Claude Code transcript is published and
becomes searchable."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest

from indexer.query.service import StoreQueryService
from tests.fixtures.importers import (
    CC_CHILD,
    CC_LEGACY_PARENT,
    CC_MAIN,
    CLAUDE_PROJECTS,
    CLAUDE_SESSIONS,
    CODEX_SESSION_IDS,
    CODEX_SESSIONS,
    CX_CHILD,
    CX_MAIN,
)
from tests.fixtures.kafka import TopicFactory
from tests.fixtures.waiting import wait_until
from tests.kafka.harness import create_topics, read_topic, running_indexer
from tests.kafka.processes import Processes
from worker.calls.pipeline import Pipeline
from worker.tools.access import Caller

pytestmark = [pytest.mark.kafka, pytest.mark.slow]


async def test_follow_publishes_both_trees_and_an_appended_record(
    kafka_bootstrap: str, topic_factory: TopicFactory, tmp_path: Path
) -> None:
    topics = await create_topics(kafka_bootstrap, topic_factory, events=2)
    claude = tmp_path / "claude" / "projects"
    codex = tmp_path / "codex" / "sessions"
    shutil.copytree(CLAUDE_PROJECTS, claude)
    shutil.copytree(CODEX_SESSIONS, codex)
    main_log = claude / "-home-dev-shop" / f"{CC_MAIN}.jsonl"
    data = tmp_path / "data"
    procs = Processes(tmp_path, topics)
    every = CLAUDE_SESSIONS | CODEX_SESSION_IDS

    async with running_indexer(data, topics.kafka(), batch_ms=20):
        service = StoreQueryService(data)
        tools = Pipeline(service)
        try:
            publisher = procs.spawn(
                "publish", "publish", "--follow", "--bootstrap", kafka_bootstrap,
                str(claude), str(codex),
            )  # fmt: skip
            await wait_until(
                lambda: all(service.get_session(sid) is not None for sid in every),
                timeout=30,
                what="every imported session to be indexed",
            )
            child = service.get_session(CC_CHILD)
            assert child is not None and child.header.parent_session == CC_MAIN
            cx_child = service.get_session(CX_CHILD)
            assert cx_child is not None and cx_child.header.parent_session == CX_MAIN
            assert cx_child.header.source_agent == "codex"

            record = {
                "parentUuid": "a0000000-0000-4000-8000-000000000011",
                "isSidechain": False,
                "cwd": "/home/dev/shop",
                "sessionId": CC_MAIN,
                "type": "user",
                "message": {"role": "user", "content": "and the TAMARIND shelf?"},
                "uuid": "a0000000-0000-4000-8000-000000000099",
                "timestamp": "2025-10-01T12:00:00.000Z",
            }
            with main_log.open("ab") as f:
                f.write(orjson.dumps(record) + b"\n")

            async def found() -> bool:
                arguments = {"query": "TAMARIND", "session_id": CC_MAIN}
                reply = await tools.call(
                    "session_event_search", arguments, Caller(CC_LEGACY_PARENT)
                )
                return "| user/message | current |" in reply.text

            await wait_until(found, timeout=30, what="the appended record to be searchable")
            assert publisher.alive(), publisher.log()
        finally:
            procs.stop_all()
            service.close()

    records = [orjson.loads(r.value) for r in await read_topic(kafka_bootstrap, topics.events)]
    headers = {r["header"]["id"]: r["header"] for r in records if r["kind"] == "header"}
    assert set(headers) == every
    assert {h["sourceAgent"] for h in headers.values()} == {"claude-code", "codex"}
    tails = [
        [e["seq"] for e in r["events"]]
        for r in records
        if r["kind"] == "events" and r["session_id"] == CC_MAIN
    ]
    assert tails == [list(range(17)), [17]]  # only the new tail after the first scan
    assert await read_topic(kafka_bootstrap, topics.dlq) == []
