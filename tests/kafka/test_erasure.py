"""Erasure over a real broker: ``sessionq delete`` publishes delete records into the
session's partition and the indexer purges the data dir's files; ``--retain-days`` makes
an indexer publish the delete records itself, and a second replica without retention
applies the very same deletes."""

from __future__ import annotations

import asyncio
import contextlib
import random
import sqlite3
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from indexer.model.records import EventsRecord, HeaderRecord
from indexer.settings import IndexerSettings, KafkaSettings
from indexer.sources.kafka import Indexer
from indexer.store.layout import sqlite_path
from indexer.store.records.store import Store
from tests.builders import header, user
from tests.erasure_scan import marker, scan
from tests.fixtures.kafka import TopicFactory
from tests.fixtures.waiting import wait_until
from tests.kafka.harness import (
    caught_up,
    create_topics,
    indexer_with,
    partition_for,
    read_topic,
    running_indexer,
)
from tests.kafka.records import RawProducer, events_record, header_record, routing_key
from worker.cli.main import main

pytestmark = pytest.mark.kafka

DAY_MS = 24 * 3600 * 1000


def stored_sessions(data: Path) -> set[str]:
    conn = sqlite3.connect(f"file:{sqlite_path(data)}?mode=ro", uri=True, timeout=30)
    try:
        return {str(r[0]) for r in conn.execute("SELECT id FROM sessions")}
    finally:
        conn.close()


def session_log(sid: str, cwd: str, text: str, t0: int) -> tuple[dict[str, Any], list[Any]]:
    head = header(sid, cwd=cwd, created_at=t0)
    events = [user(seq, f"{text} message {seq}", time=t0 + seq * 1000) for seq in range(6)]
    return head, events


async def publish(
    producer: RawProducer, topic: str, head: dict[str, Any], events: list[Any]
) -> int:
    """The session's header and events, keyed like the publisher; returns the partition."""
    key = routing_key(head)
    await producer.send_json(topic, header_record(head), key=key)
    meta = await producer.send_json(topic, events_record(str(head["id"]), events), key=key)
    return int(meta.partition)


@contextlib.asynccontextmanager
async def retaining_indexer(data: Path, kafka: KafkaSettings) -> AsyncIterator[Indexer]:
    settings = IndexerSettings(
        data=data, kafka=kafka, batch_ms=20, retain_days=30, retention_check_ms=100
    )
    async with indexer_with(settings) as running:
        yield running.indexer


async def test_retention_deletes_are_records_every_replica_applies(
    kafka_bootstrap: str, topic_factory: TopicFactory, tmp_path: Path
) -> None:
    topics = await create_topics(kafka_bootstrap, topic_factory, events=3)
    kafka = topics.kafka()
    now_ms = int(time.time() * 1000)
    old = session_log("old-session", "/w/old", "forgotten", now_ms - 90 * DAY_MS)
    fresh = session_log("fresh-session", "/w/fresh", "current", now_ms - 3_600_000)
    async with RawProducer(kafka_bootstrap) as producer:
        old_partition = await publish(producer, topics.events, *old)
        await publish(producer, topics.events, *fresh)
    a, b = tmp_path / "replica-a", tmp_path / "replica-b"
    async with (
        retaining_indexer(a, kafka) as retaining,
        running_indexer(b, kafka, batch_ms=20) as plain,
    ):

        async def both_erased() -> bool:
            """Applied and purged (a pass follows the commit that applied the delete)."""
            return (
                await caught_up(a, kafka_bootstrap, topics.events)
                and await caught_up(b, kafka_bootstrap, topics.events)
                and all(stored_sessions(d) == {"fresh-session"} for d in (a, b))
                and not any(scan(d, [b"forgotten"])[b"forgotten"] for d in (a, b))
            )

        await wait_until(both_erased, timeout=60, what="both replicas to drop the old session")
        assert retaining.counters.expired == 1
        registry = retaining.metrics.registry
        assert registry.get_sample_value("sessionq_retention_deletes_total") == 1
        assert (registry.get_sample_value("sessionq_purge_seconds_count") or 0) >= 1
        assert plain.indexer.counters.expired == 0
        records = await read_topic(kafka_bootstrap, topics.events)
        deletes = [r for r in records if orjson.loads(r.value)["kind"] == "delete"]
        assert [orjson.loads(r.value)["session_id"] for r in deletes] == ["old-session"]
        assert deletes[0].key == b"/w/old" and deletes[0].partition == old_partition
        for data in (a, b):  # physically gone too, the fresh session's text still there
            found = scan(data, [b"forgotten", b"current"])
            assert not found[b"forgotten"] and found[b"current"], (data, found)


async def test_delete_command_publishes_into_each_sessions_partition(
    kafka_bootstrap: str,
    topic_factory: TopicFactory,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    topics = await create_topics(kafka_bootstrap, topic_factory, events=3)
    for name, value in topics.env().items():
        monkeypatch.setenv(name, value)
    rng = random.Random(5)
    gone_text = marker(rng)
    kept_text = marker(rng, avoid=[gone_text])
    now_ms = int(time.time() * 1000)
    logs = {
        "s-gone": session_log("s-gone", "/w/one", gone_text, now_ms),
        "s-kept": session_log("s-kept", "/w/two", kept_text, now_ms),
        "s-no-replica": session_log("s-no-replica", "/w/three", "third", now_ms),
    }
    data = tmp_path / "data"
    async with (
        RawProducer(kafka_bootstrap) as producer,
        running_indexer(data, topics.kafka(), batch_ms=20),
    ):
        for log in logs.values():
            await publish(producer, topics.events, *log)
        await wait_until(
            lambda: caught_up(data, kafka_bootstrap, topics.events), timeout=30, what="indexing"
        )
        assert scan(data, [gone_text.encode()])[gone_text.encode()]

        argv = ["delete", "s-gone", "nobody", "--bootstrap", kafka_bootstrap, "--data", str(data)]
        assert await asyncio.to_thread(main, argv) == 0
        out = capsys.readouterr().out.splitlines()
        expected = partition_for(b"/w/one", 3)
        assert out[0].startswith(f"s-gone: delete record published ({topics.events} partition")
        assert f"partition {expected}," in out[0]
        assert out[1] == f"nobody: unknown (not in {data}); nothing sent"

        argv = ["delete", "s-no-replica", "--bootstrap", kafka_bootstrap, "--workspace", "/w/three"]
        assert await asyncio.to_thread(main, argv) == 0
        assert f"partition {partition_for(b'/w/three', 3)}," in capsys.readouterr().out

        def erased() -> bool:
            gone = scan(data, [gone_text.encode()])[gone_text.encode()]
            return stored_sessions(data) == {"s-kept"} and not gone

        await wait_until(erased, timeout=30, what="the deletes, applied and purged")
        found = scan(data, [gone_text.encode(), gone_text.lower().encode(), kept_text.encode()])
        assert found[kept_text.encode()], "the control must be found"
        assert not found[gone_text.encode()] and not found[gone_text.lower().encode()], found


async def test_retention_waits_until_the_replica_is_caught_up(
    kafka_bootstrap: str, topic_factory: TopicFactory, tmp_path: Path
) -> None:
    """A replica that has not caught up once publishes no delete: its view of a session
    may miss the newer events still ahead of it in the topic."""
    topics = await create_topics(kafka_bootstrap, topic_factory, events=1)
    data = tmp_path / "data"
    head, events = session_log(
        "idle", "/w/idle", "idle words", int(time.time() * 1000) - 60 * DAY_MS
    )
    store = Store(data)  # a data dir that already holds an expired session
    store.apply(HeaderRecord(v=1, kind="header", header=head))
    store.apply(EventsRecord(v=1, kind="events", session_id="idle", events=events))
    store.commit()
    store.close()
    indexer = Indexer(
        IndexerSettings(data=data, kafka=topics.kafka(), retain_days=30, retention_check_ms=1)
    )
    await indexer.start()
    try:
        await indexer._housekeeping()  # not caught up yet: skipped
        assert indexer.counters.expired == 0
        assert await caught_up(data, kafka_bootstrap, topics.events)  # empty topic
        assert await indexer.caught_up()
        await asyncio.sleep(0.01)
        await indexer._housekeeping()
        assert indexer.counters.expired == 1
    finally:
        await indexer.close()
    records = await read_topic(kafka_bootstrap, topics.events)
    assert [orjson.loads(r.value) for r in records] == [
        {"v": 1, "kind": "delete", "session_id": "idle"}
    ]
