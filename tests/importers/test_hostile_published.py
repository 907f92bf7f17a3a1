"""``sessionq publish --follow`` as a real process over a tree of hostile files
(``hostile_tree``), against a real broker and indexer: the good logs reach the store
(an appended record too), the symlink loop, the FIFO and the line nested 1,000 levels
deep are each named once while it runs (the deep one with its line), nothing of them is
published, the process keeps running, and SIGTERM stops it with its summary."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from indexer.query.service import StoreQueryService
from tests.fixtures.importers import CC_LEGACY_PARENT, CC_MAIN, CLAUDE_SESSIONS
from tests.fixtures.kafka import TopicFactory
from tests.fixtures.waiting import wait_until
from tests.importers.hostile_tree import hostile_tree
from tests.importers.test_hostile_served import _append_event
from tests.importers.test_serve_import import _record
from tests.kafka.harness import create_topics, read_topic, running_indexer
from tests.kafka.processes import Processes
from worker.calls.pipeline import Pipeline
from worker.tools.access import Caller

pytestmark = [pytest.mark.kafka, pytest.mark.slow]


async def test_publish_follow_over_a_hostile_tree_publishes_the_rest(
    kafka_bootstrap: str, topic_factory: TopicFactory, tmp_path: Path
) -> None:
    topics = await create_topics(kafka_bootstrap, topic_factory, events=2)
    tree = hostile_tree(tmp_path / "root")
    data = tmp_path / "data"
    procs = Processes(tmp_path, topics)
    every = CLAUDE_SESSIONS | {tree.dsh_id}

    async with running_indexer(data, topics.kafka(), batch_ms=20):
        service = StoreQueryService(data)
        tools = Pipeline(service)
        try:
            publisher = procs.spawn(
                "publish", "publish", "--follow", "--bootstrap", kafka_bootstrap, *tree.roots
            )
            await wait_until(
                lambda: all(service.get_session(sid) is not None for sid in every),
                timeout=60,
                what="every good session to be indexed",
            )
            _append_event(tree.deep, "deeper still")  # read again, rejected again
            with (tree.claude / "-home-dev-shop" / f"{CC_MAIN}.jsonl").open("ab") as f:
                f.write(_record("z1", "the PERSIMMON arrives") + b"\n")

            async def found() -> bool:
                arguments = {"query": "PERSIMMON", "session_id": CC_MAIN}
                reply = await tools.call(
                    "session_event_search", arguments, Caller(CC_LEGACY_PARENT)
                )
                return "| user/message | current |" in reply.text

            await wait_until(found, timeout=60, what="the appended record to be searchable")
            assert publisher.alive(), publisher.log()
            running = publisher.log()
            for bad in (tree.loop, tree.fifo, tree.deep):
                assert running.count(str(bad)) == 1, running
            assert f"{tree.loop}: skipped: a symlink loop" in running
            assert f"{tree.fifo}: skipped: a FIFO" in running
            assert tree.deep_reason in running
            assert service.get_session("deep") is None
            assert publisher.kill(15) == 0, publisher.log()  # SIGTERM
        finally:
            procs.stop_all()
            service.close()

    log = publisher.log()
    assert "Traceback" not in log, log
    summary = log.splitlines()[log.splitlines().index(_summary_line(log)) :]
    assert "  not published: 3 (each named above)" in summary, summary
    for bad in (tree.loop, tree.fifo, tree.deep):
        assert log.count(str(bad)) == 1, log  # named once, when met
    records = [orjson.loads(r.value) for r in await read_topic(kafka_bootstrap, topics.events)]
    headers = {r["header"]["id"] for r in records if r["kind"] == "header"}
    assert headers == every
    assert await read_topic(kafka_bootstrap, topics.dlq) == []


def _summary_line(log: str) -> str:
    lines = [line for line in log.splitlines() if line.startswith("published ")]
    assert len(lines) == 1, log
    return lines[0]
