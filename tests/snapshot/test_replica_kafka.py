"""A new replica from a snapshot, over a real broker: the first indexer consumes the
events topic and publishes snapshots periodically; a snapshot is also taken by hand
while that indexer is still consuming; a second data dir restored from it resumes from
the snapshot's offsets — reading only what came after them — and ends with exactly the
first replica's sessions, documents, offsets and tool answers."""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from indexer.logs.roots import discover
from indexer.query.service import StoreQueryService
from indexer.settings import IndexerSettings, KafkaSettings
from indexer.snapshot.create import complete_snapshots, create_snapshot
from indexer.snapshot.restore import restore_snapshot
from indexer.snapshot.stores import DirectoryStore
from indexer.sources.kafka import Indexer
from tests.fixtures.kafka import TopicFactory
from tests.fixtures.waiting import wait_until
from tests.kafka.harness import (
    Call,
    caught_up,
    create_topics,
    end_offsets,
    indexer_with,
    publish,
    reference_reply,
    stored_offsets,
)
from tests.snapshots import snapshot
from worker.calls.pipeline import Pipeline

pytestmark = pytest.mark.kafka

ACP = "11111111-1111-4111-8111-111111111111"
WEB = "8e884627-32e0-57ef-a72e-2078cfa0b12d"
HEADLESS = "95d7567e-2d45-569e-9786-196c6d5ed6bf"
CALLS = [
    Call("session_search", {"query": "subagent"}, ACP),
    Call("session_search", {"query": "notes.txt"}, WEB),
    Call("session_trace", {}, ACP),
    Call("session_event_read", {"seq": 5, "before": 2, "after": 2}, HEADLESS),
    Call("session_event_search", {"query": "file"}, ACP),
]


@contextlib.asynccontextmanager
async def indexing(settings: IndexerSettings) -> AsyncIterator[Indexer]:
    async with indexer_with(settings, stop_within_s=60) as running:
        yield running.indexer


async def answers(data: Path) -> list[str]:
    service = StoreQueryService(data)
    try:
        tools = Pipeline(service)
        return [
            (await reference_reply(tools, call, f"r{n}")).encode().decode()
            for n, call in enumerate(CALLS)
        ]
    finally:
        service.close()


async def _all_caught_up(data: Path, kafka: KafkaSettings) -> bool:
    return await caught_up(data, kafka.bootstrap, kafka.events_topic)


@pytest.mark.slow
async def test_a_replica_restored_from_a_snapshot_resumes_from_its_offsets(
    kafka_bootstrap: str, topic_factory: TopicFactory, corpus_dir: Path, tmp_path: Path
) -> None:
    topics = await create_topics(kafka_bootstrap, topic_factory, events=2, requests=1)
    kafka = topics.kafka()
    files = discover([corpus_dir])
    parts = [files[:50], files[50:110], files[110:]]
    first, second = tmp_path / "first", tmp_path / "second"
    periodic, by_hand = tmp_path / "periodic", tmp_path / "by-hand"
    settings = IndexerSettings(
        data=first,
        kafka=kafka,
        batch_records=20,  # many small batches: the indexer is mid-stream for a while
        batch_ms=20,
        snapshot_every=0.3,
        snapshot_to=str(periodic),
        snapshot_keep=2,
    )

    async with indexing(settings) as indexer:
        await publish(kafka_bootstrap, topics.events, parts[0])
        await wait_until(
            lambda: _all_caught_up(first, kafka), timeout=60, what="the first part", interval=0.1
        )
        part_one = sum((await end_offsets(kafka_bootstrap, topics.events)).values())
        await publish(kafka_bootstrap, topics.events, parts[1])
        # while the indexer still works through the second part
        # (the periodic snapshots run meanwhile: this one waits for its turn, as the CLI's)
        taken = await asyncio.to_thread(
            functools.partial(create_snapshot, first, DirectoryStore(by_hand), wait_s=60)
        )
        await publish(kafka_bootstrap, topics.events, parts[2])
        await wait_until(
            lambda: _all_caught_up(first, kafka), timeout=120, what="all parts", interval=0.1
        )
        await wait_until(
            lambda: indexer.snapshots is not None and indexer.snapshots.published >= 2,
            timeout=30,
            what="periodic snapshots",
        )
        assert indexer.snapshots is not None and indexer.snapshots.failed == 0
    ends = await end_offsets(kafka_bootstrap, topics.events)
    total = sum(ends.values())
    resumed_from = {(o.topic, o.partition): o.next_offset for o in taken.manifest.offsets}
    assert part_one <= sum(resumed_from.values()) < total
    assert len(complete_snapshots(DirectoryStore(periodic))) == 2  # --snapshot-keep 2

    outcome = restore_snapshot(DirectoryStore(by_hand), second)
    assert outcome.restored and stored_offsets(second) == resumed_from
    replica = IndexerSettings(data=second, kafka=kafka, batch_records=500, batch_ms=50)
    async with indexing(replica) as indexer_two:
        await wait_until(
            lambda: _all_caught_up(second, kafka), timeout=120, what="the replica", interval=0.1
        )
        counted = indexer_two.counters
        read = counted.applied + counted.noop + counted.dead_lettered
    # it read exactly the records after the snapshot's offsets, none from offset 0
    assert read == total - sum(resumed_from.values())
    assert counted.dead_lettered == 0
    assert snapshot(second) == snapshot(first)
    assert stored_offsets(second) == {(topics.events, p): end for p, end in ends.items()}
    assert await answers(second) == await answers(first)

    # the newest periodic snapshot restores to a consistent store too
    third = tmp_path / "third"
    restore_snapshot(DirectoryStore(periodic), third)
    offsets = stored_offsets(third)
    assert 0 < sum(offsets.values()) <= total
