"""Helpers for the end-to-end Kafka tests: topic sets, topic readers, the store's stored
offsets, the sessionq roles run in this process (indexer, worker, a whole stack), and the
in-process reference answers. Raw records live in ``records``, CLI subprocesses in
``processes``, polling in ``waiting``.

Everything talks to the real broker of ``tests/kafka/conftest.py``; nothing is mocked.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import sqlite3
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.partitioner import DefaultPartitioner
from aiokafka.structs import ConsumerRecord

from indexer.kafka.client import Producer
from indexer.logs.roots import discover
from indexer.query.service import StoreQueryService
from indexer.settings import IndexerSettings, KafkaSettings
from indexer.sources.files import ingest_files
from indexer.sources.kafka import Indexer
from indexer.store.layout import sqlite_path
from indexer.store.records.store import Store
from tests.fixtures.waiting import wait_until
from tests.kafka.records import RawProducer, ReplyTap, events_record, header_record, routing_key
from worker.calls.pipeline import Pipeline
from worker.contract.envelopes import Reply, reply_for
from worker.host.client import SessionqClient
from worker.host.publisher import Publisher
from worker.settings import WorkerSettings
from worker.tools.access import Caller
from worker.transports.kafka.worker import Worker

# ---- topics ----


@dataclass(frozen=True)
class Topics:
    """One test's private set of sessionq topics."""

    bootstrap: str
    events: str
    requests: str
    replies: str
    dlq: str
    lineage: str | None = None  # the partitioned nodes' topic, when a test has one

    def kafka(self) -> KafkaSettings:
        return KafkaSettings(
            bootstrap=self.bootstrap,
            events_topic=self.events,
            requests_topic=self.requests,
            replies_topic=self.replies,
            dlq_topic=self.dlq,
            **({} if self.lineage is None else {"lineage_topic": self.lineage}),
        )

    def env(self) -> dict[str, str]:
        """The environment that points a CLI subprocess at these topics."""
        env = {
            "SESSIONQ_EVENTS_TOPIC": self.events,
            "SESSIONQ_REQUESTS_TOPIC": self.requests,
            "SESSIONQ_REPLIES_TOPIC": self.replies,
            "SESSIONQ_DLQ_TOPIC": self.dlq,
        }
        if self.lineage is not None:
            env["SESSIONQ_LINEAGE_TOPIC"] = self.lineage
        return env

    def names(self) -> list[str]:
        topics = [self.events, self.requests, self.replies, self.dlq]
        return topics if self.lineage is None else [*topics, self.lineage]


async def end_offsets(bootstrap: str, topic: str) -> dict[int, int]:
    """The current end offset of every partition of ``topic``. Never empty: a loaded broker
    may answer a metadata request without a topic created a moment ago, and an empty answer
    would make every "caught up" check true at once."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        deadline = time.monotonic() + 60
        parts = consumer.partitions_for_topic(topic)
        while not parts:
            if time.monotonic() > deadline:
                raise AssertionError(f"topic {topic} has no partitions in the broker's metadata")
            await asyncio.sleep(0.2)
            await consumer._client.force_metadata_update()
            parts = consumer.partitions_for_topic(topic)
        tps = [TopicPartition(topic, p) for p in sorted(parts)]
        ends = await consumer.end_offsets(tps)
        return {tp.partition: ends[tp] for tp in tps}
    finally:
        await consumer.stop()


async def read_topic(bootstrap: str, topic: str, *, timeout: float = 30) -> list[ConsumerRecord]:
    """Every record of ``topic`` up to its current end offsets, in (partition, offset) order."""
    ends = await end_offsets(bootstrap, topic)
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest"
    )
    await consumer.start()
    out: list[ConsumerRecord] = []
    try:
        tps = [TopicPartition(topic, p) for p in ends]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        async with asyncio.timeout(timeout):
            while [tp for tp in tps if await consumer.position(tp) < ends[tp.partition]]:
                for records in (await consumer.getmany(timeout_ms=200)).values():
                    out.extend(r for r in records if r.offset < ends[r.partition])
    finally:
        await consumer.stop()
    out.sort(key=lambda r: (r.partition, r.offset))
    return out


async def has_records(bootstrap: str, topic: str, n: int) -> bool:
    """``topic`` holds at least ``n`` records (all partitions)."""
    return sum((await end_offsets(bootstrap, topic)).values()) >= n


async def committed_offsets(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    """The consumer group's committed offset per partition of ``topic``."""
    from aiokafka.admin import AIOKafkaAdminClient

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        offsets = await admin.list_consumer_group_offsets(group)
    finally:
        await admin.close()
    return {tp.partition: int(om.offset) for tp, om in offsets.items() if tp.topic == topic}


def partition_for(key: bytes, partitions: int) -> int:
    """The partition the default (murmur2) partitioner picks for ``key``."""
    all_parts = list(range(partitions))
    return int(DefaultPartitioner()(key, all_parts, all_parts))


def keys_per_partition(partitions: int, prefix: str = "ws") -> dict[int, str]:
    """One routing key per partition (found by trying ``<prefix>-0``, ``<prefix>-1``...)."""
    out: dict[int, str] = {}
    i = 0
    while len(out) < partitions:
        key = f"{prefix}-{i}"
        out.setdefault(partition_for(key.encode(), partitions), key)
        i += 1
    return out


# ---- the store ----


def stored_offsets(data_dir: Path) -> dict[tuple[str, int], int]:
    """The offsets committed with the data (empty while the database does not exist)."""
    path = sqlite_path(data_dir)
    if not path.exists():
        return {}
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    try:
        rows = conn.execute("SELECT topic, partition, next_offset FROM offsets").fetchall()
    except sqlite3.OperationalError:  # the schema is not there yet
        return {}
    finally:
        conn.close()
    return {(t, int(p)): int(o) for t, p, o in rows}


def held_sessions(data_dir: Path) -> dict[str, str]:
    conn = sqlite3.connect(f"file:{sqlite_path(data_dir)}?mode=ro", uri=True, timeout=30)
    try:
        rows = conn.execute("SELECT id, held FROM sessions WHERE held IS NOT NULL").fetchall()
    finally:
        conn.close()
    return {str(i): str(h) for i, h in rows}


async def caught_up(data_dir: Path, bootstrap: str, topic: str) -> bool:
    """The data dir's stored offsets equal the topic's end offsets (every partition)."""
    ends = await end_offsets(bootstrap, topic)
    stored = stored_offsets(data_dir)
    return all(stored.get((topic, p), 0) == end for p, end in ends.items())


async def publish_texts(
    producer: RawProducer,
    topics: Topics,
    data: Path,
    sessions: Sequence[tuple[dict[str, Any], str]],
) -> None:
    """Each ``(header, text)`` published as a session whose one event is the user's
    ``text``, then waited for until the indexer over ``data`` has every record."""
    from tests.builders import user

    for head, text in sessions:
        key = routing_key(head)
        await producer.send_json(topics.events, header_record(head), key=key)
        await producer.send_json(topics.events, events_record(head["id"], [user(0, text)]), key=key)
    await wait_until(
        lambda: caught_up(data, topics.bootstrap, topics.events),
        timeout=60,
        what="the indexer to catch up",
        interval=0.05,
    )


def ingest_reference(data_dir: Path, paths: Sequence[Path]) -> None:
    """The in-process reference store: ``ingest_files`` over the same logs."""
    store = Store(data_dir)
    try:
        ingest_files(store, discover(paths))
    finally:
        store.close()


async def publish(bootstrap: str | KafkaSettings, topic: str, paths: Sequence[Path]) -> Publisher:
    """Publish dsh logs once with the product publisher (its ``summary`` and ``rejected``
    tell what went out); a secured broker is given as its ``KafkaSettings``."""
    kafka = KafkaSettings(bootstrap=bootstrap) if isinstance(bootstrap, str) else bootstrap
    producer = Producer(kafka, client_id="test-publisher")
    await producer.start()
    try:
        publisher = Publisher(producer, topic)
        await publisher.run(list(paths), follow=False)
    finally:
        await producer.stop()
    return publisher


# ---- in-process roles ----


@dataclass
class RunningIndexer:
    """An ``Indexer`` and the background task running it."""

    indexer: Indexer
    task: asyncio.Task[None]

    def died(self) -> bool:
        return self.task.done()


@contextlib.asynccontextmanager
async def running_indexer(
    data_dir: Path, kafka: KafkaSettings, *, batch_records: int = 5000, batch_ms: int = 100
) -> AsyncIterator[RunningIndexer]:
    """An ``Indexer`` consuming in a background task; stopped and closed on exit (a task
    that died re-raises its error there)."""
    settings = IndexerSettings(
        data=data_dir, kafka=kafka, batch_records=batch_records, batch_ms=batch_ms
    )
    async with indexer_with(settings) as running:
        yield running


@contextlib.asynccontextmanager
async def indexer_with(
    settings: IndexerSettings, *, stop_within_s: float = 30
) -> AsyncIterator[RunningIndexer]:
    """``running_indexer`` for any indexer settings (retention, snapshots, ...)."""
    indexer = Indexer(settings)
    await indexer.start()
    task = asyncio.create_task(indexer.run(), name="test-indexer")
    try:
        yield RunningIndexer(indexer, task)
    finally:
        await indexer.stop()
        try:
            await asyncio.wait_for(task, stop_within_s)
        finally:
            await indexer.close()


@contextlib.asynccontextmanager
async def running_worker(
    data_dir: Path,
    kafka: KafkaSettings,
    group: str,
    *,
    max_in_flight: int = 64,
    keyring: Path | None = None,
    reply_topics: Sequence[str] | None = None,
    **more: Any,
) -> AsyncIterator[Worker]:
    """A ``Worker`` serving in a background task over ``data_dir`` (which must hold a store
    already); stopped on exit. Without a ``keyring`` callers are not authenticated. Its
    replies may go to the test's replies topic and, like the product default, to
    ``<replies topic>.*`` unless ``reply_topics`` says otherwise. ``more`` are further
    ``WorkerSettings`` (``tools``, ``max_admitted_per_host``, ...)."""
    service = StoreQueryService(data_dir)
    if reply_topics is None:
        reply_topics = [kafka.replies_topic, f"{kafka.replies_topic}.*"]
    settings = WorkerSettings(
        data=data_dir,
        kafka=kafka,
        group=group,
        max_in_flight=max_in_flight,
        reply_topics=list(reply_topics),
        keyring=keyring,
        insecure_unauthenticated_callers=keyring is None,
        **more,
    )
    worker = Worker(settings, service)
    await worker.start()
    task = asyncio.create_task(worker.run(), name="test-worker")
    try:
        yield worker
    finally:
        await worker.stop()
        try:
            await asyncio.wait_for(task, 30)
        finally:
            await worker.close()
            service.close()


async def wait_assigned(worker: Worker, partitions: int, *, timeout: float = 30) -> None:
    """The in-process worker owns every partition of the requests topic."""
    await wait_until(
        lambda: len(worker.assigned) == partitions,
        timeout=timeout,
        what=f"the worker to be assigned {partitions} partitions",
    )


# ---- in-process reference answers ----


@dataclass(frozen=True)
class Call:
    """One tool call as a host makes it."""

    tool: str
    arguments: Any
    caller: str
    step_seq: int | None = None
    routing_key: str | None = None


async def reference_reply(tools: Pipeline, call: Call, request_id: str) -> Reply:
    """The reply envelope the in-process tool service gives for ``call``."""
    result = await tools.call(call.tool, call.arguments, Caller(call.caller, call.step_seq))
    return reply_for(request_id, result)


# ---- a whole in-process deployment ----


async def create_topics(
    bootstrap: str,
    topic_factory: Callable[..., Awaitable[str]],
    *,
    events: int = 1,
    requests: int = 2,
    replies: int = 1,
) -> Topics:
    """A fresh, uniquely named set of the four sessionq topics."""
    return Topics(
        bootstrap,
        events=await topic_factory(partitions=events),
        requests=await topic_factory(partitions=requests),
        replies=await topic_factory(partitions=replies),
        dlq=await topic_factory(partitions=1),
    )


@dataclass
class Stack:
    """Indexer + worker in this process over one data dir, a host client, a raw producer
    and a tap on the client's reply topic."""

    topics: Topics
    data: Path
    indexer: RunningIndexer
    worker: Worker
    client: SessionqClient
    producer: RawProducer
    tap: ReplyTap

    async def publish_session(
        self, header: Mapping[str, Any], events: Sequence[Mapping[str, Any]] = ()
    ) -> None:
        """Produce a session's header and events record (keyed like the publisher)."""
        key = routing_key(header)
        await self.producer.send_json(self.topics.events, header_record(header), key=key)
        if events:
            await self.producer.send_json(
                self.topics.events, events_record(str(header["id"]), events), key=key
            )

    async def indexed(self, timeout: float = 30) -> None:
        """Wait until the indexer has committed everything on the events topic."""
        await wait_until(
            lambda: caught_up(self.data, self.topics.bootstrap, self.topics.events),
            timeout=timeout,
            what="the indexer to catch up",
            interval=0.05,
        )

    async def committed_past(self, partition: int, offset: int) -> bool:
        """The worker group has committed ``partition`` of the requests topic to ``offset``."""
        committed = await committed_offsets(
            self.topics.bootstrap, self.worker.settings.group, self.topics.requests
        )
        return committed.get(partition, -1) >= offset

    def metric(self, name: str, labels: Mapping[str, str] | None = None) -> float:
        value = self.worker.metrics.registry.get_sample_value(name, dict(labels or {}))
        return 0.0 if value is None else float(value)


@contextlib.asynccontextmanager
async def running_stack(
    topics: Topics, data: Path, group: str, *, max_in_flight: int = 64
) -> AsyncIterator[Stack]:
    """Indexer, worker (it needs the store the indexer creates), client, producer, tap."""
    kafka = topics.kafka()
    async with (
        running_indexer(data, kafka, batch_ms=20) as indexer,
        running_worker(data, kafka, group, max_in_flight=max_in_flight) as worker,
        SessionqClient(kafka) as client,
        RawProducer(topics.bootstrap) as producer,
        ReplyTap(topics.bootstrap, topics.replies) as tap,
    ):
        requests_partitions = len(await end_offsets(topics.bootstrap, topics.requests))
        await wait_assigned(worker, requests_partitions)
        yield Stack(topics, data, indexer, worker, client, producer, tap)


@contextlib.asynccontextmanager
async def product_topics(
    bootstrap: str, prefix: str, partitions: int = 2
) -> AsyncIterator[tuple[Topics, dict[str, str]]]:
    """The five topics created by the product's own ``ensure_topics`` (its partition
    counts and configs) under unique names; deleted afterwards."""
    from aiokafka.admin import AIOKafkaAdminClient

    from worker.host.topics import ensure_topics

    topics = Topics(
        bootstrap,
        events=f"{prefix}.events",
        requests=f"{prefix}.requests",
        replies=f"{prefix}.replies",
        dlq=f"{prefix}.dlq",
        lineage=f"{prefix}.lineage",
    )
    result = await ensure_topics(topics.kafka(), partitions)
    try:
        for name in topics.names():
            await wait_until(
                functools.partial(_has_partitions, bootstrap, name),
                timeout=30,
                what=f"topic {name} to be ready",
            )
        yield topics, result
    finally:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        try:
            await admin.delete_topics(topics.names())
        finally:
            await admin.close()


async def _has_partitions(bootstrap: str, topic: str) -> bool:
    return bool(await end_offsets(bootstrap, topic))


@contextlib.asynccontextmanager
async def stack_with_session(
    bootstrap: str,
    topic_factory: Callable[..., Awaitable[str]],
    group: str,
    data: Path,
    header: dict[str, Any],
    events: Sequence[dict[str, Any]],
) -> AsyncIterator[Stack]:
    """A running stack (1 events partition, 2 request partitions) with one session
    published and indexed: the caller most request tests need."""
    topics = await create_topics(bootstrap, topic_factory, events=1, requests=2)
    async with running_stack(topics, data, group) as s:
        await s.publish_session(header, events)
        await s.indexed()
        yield s


def session_stack(header: dict[str, Any], events: Sequence[dict[str, Any]]) -> Any:
    """A test module's ``stack`` fixture: ``stack_with_session`` over ``header`` and
    ``events``, its group and data dir the test's own."""
    import pytest

    from tests.fixtures.kafka import TopicFactory, UniqueName

    @pytest.fixture
    async def stack(
        kafka_bootstrap: str, topic_factory: TopicFactory, unique_name: UniqueName, tmp_path: Path
    ) -> AsyncIterator[Stack]:
        group, data = unique_name("group"), tmp_path / "data"
        async with stack_with_session(
            kafka_bootstrap, topic_factory, group, data, header, events
        ) as s:
            yield s

    return stack
