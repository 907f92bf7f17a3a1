"""``sessionq publish --follow`` against a real broker: events appended to a session log
(and a log that appears later) reach the indexed store and become searchable within a
couple of seconds, only the new tail is published, and a removed log deletes its session."""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest

from indexer.query.service import StoreQueryService
from tests.builders import assistant, plain, user
from tests.fixtures.kafka import TopicFactory
from tests.fixtures.waiting import wait_until
from tests.kafka.harness import (
    create_topics,
    read_topic,
    running_indexer,
)
from tests.kafka.processes import Processes
from worker.calls.pipeline import Pipeline
from worker.tools.access import Caller

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

CHILD_1 = "22222222-2222-4222-8222-222222222222"  # /home/dev/acp-agent, seq 0..18
CHILD_2 = "33333333-3333-4333-8333-333333333333"  # /home/dev/acp-agent, seq 0..18
ROOT = "11111111-1111-4111-8111-111111111111"  # /home/dev/acp-agent, appears later
FILES = {
    CHILD_1: "examples__acp-agent__advanced-toolchain__session.1.jsonl",
    CHILD_2: "examples__acp-agent__advanced-toolchain__session.2.jsonl",
    ROOT: "examples__acp-agent__advanced-toolchain__session.jsonl",
}


def append(path: Path, events: Sequence[Mapping[str, Any]]) -> None:
    """Append whole JSONL lines with one write, as a dsh host does."""
    with path.open("ab") as f:
        f.write(b"".join(orjson.dumps(dict(e)) + b"\n" for e in events))


async def test_follow_publishes_appended_events_and_new_logs_until_searchable(
    kafka_bootstrap: str, topic_factory: TopicFactory, corpus_dir: Path, tmp_path: Path
) -> None:
    topics = await create_topics(kafka_bootstrap, topic_factory, events=2)
    logs = tmp_path / "logs"
    logs.mkdir()
    for sid in (CHILD_1, CHILD_2):
        shutil.copy(corpus_dir / FILES[sid], logs / FILES[sid])
    followed = logs / FILES[CHILD_2]
    data = tmp_path / "data"
    procs = Processes(tmp_path, topics)

    async with running_indexer(data, topics.kafka(), batch_ms=20):
        service = StoreQueryService(data)
        tools = Pipeline(service)

        async def search(query: str, target: str) -> str:
            """The model's text (a target not stored yet is "outside the workspace")."""
            reply = await tools.call(
                "session_event_search", {"query": query, "session_id": target}, Caller(CHILD_1)
            )
            return reply.text

        async def searchable(query: str, target: str, seq: int, typ: str) -> None:
            """Within a generous deadline: how soon is a benchmark's question
            (``bench/bench_watcher.py``), not a test's."""

            async def found() -> bool:
                return f"seq {seq} | {typ}" in await search(query, target)

            await wait_until(found, timeout=60, what=f"{query!r} to become searchable")

        try:
            publisher = procs.spawn(
                "publish", "publish", "--follow", "--bootstrap", kafka_bootstrap, str(logs)
            )
            await wait_until(
                lambda: service.last_seq(CHILD_1) == 18 and service.last_seq(CHILD_2) == 18,
                timeout=30,
                what="the copied logs to be indexed",
            )
            assert "No prior event matches found." in await search("quokka", CHILD_2)

            # An appended tail is published and indexed.
            append(followed, [user(19, "does the quokka follow along"), assistant(20, "yes")])
            await searchable("quokka", CHILD_2, 19, "user/message")
            assert service.last_seq(CHILD_2) == 20

            # And again: following goes on after the first append.
            append(followed, [plain(21, "turn/start", {"turn": 2}), user(22, "a wombat too")])
            await searchable("wombat", CHILD_2, 22, "user/message")

            # A log that appears while following is published as a new session.
            shutil.copy(corpus_dir / FILES[ROOT], logs / FILES[ROOT])
            await searchable("advanced flow", ROOT, 4, "user/message")

            # A log that disappears is published as a delete: the session is gone.
            (logs / FILES[ROOT]).unlink()
            await wait_until(
                lambda: service.get_session(ROOT) is None,
                timeout=60,
                what="the removed log's session to be deleted",
            )
            assert "outside the caller workspace" in await search("advanced flow", ROOT)
            assert publisher.alive(), publisher.log()
        finally:
            procs.stop_all()
            service.close()

    # Only new tails went out: one header per session, then one record per change.
    records = [orjson.loads(r.value) for r in await read_topic(kafka_bootstrap, topics.events)]
    kinds = sorted((r["kind"], r.get("session_id") or r["header"]["id"]) for r in records)
    assert kinds == sorted(
        [
            ("header", CHILD_1),
            ("events", CHILD_1),
            ("header", CHILD_2),
            ("events", CHILD_2),
            ("events", CHILD_2),
            ("events", CHILD_2),
            ("header", ROOT),
            ("events", ROOT),
            ("delete", ROOT),
        ]
    )
    tails = [
        [e["seq"] for e in r["events"]]
        for r in records
        if r["kind"] == "events" and r["session_id"] == CHILD_2
    ]
    assert tails == [list(range(19)), [19, 20], [21, 22]]
    assert await read_topic(kafka_bootstrap, topics.dlq) == []
