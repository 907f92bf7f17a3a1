"""The Kafka indexer on the one record path (issue 8), under injected failures, over a
real broker.

A failure of one record (its rows, its index documents) rolls that record back and
dead-letters it with its reason and code; the records around it are stored. A failure
of the batch (the commit's Tantivy or SQLite step, or SQLite ending the transaction
while a record applies) dead-letters nothing: the indexer seeks back to the stored
offsets, backs off and replays, and once the failure clears the store equals a clean
apply of the same records.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiokafka.structs import RecordMetadata

import indexer.sources.kafka as indexer_module
import indexer.store.tantivy.index as index_module
from indexer.store.tables.sqlite_tables import SqliteTables
from indexer.store.tantivy import TantivyIndex
from tests.builders import assistant, header, plain, user
from tests.fixtures.kafka import TopicFactory
from tests.fixtures.stores import SessionSpec, build_store
from tests.fixtures.waiting import wait_until
from tests.injection import TransactionLoss, doc_of, docs_of, events_batch_of, inject
from tests.kafka.harness import (
    Topics,
    caught_up,
    create_topics,
    end_offsets,
    read_topic,
    running_indexer,
    stored_offsets,
)
from tests.kafka.records import (
    RawProducer,
    assert_dead_letter,
    dead_letters,
    events_record,
    header_record,
    routing_key,
)
from tests.snapshots import snapshot

pytestmark = pytest.mark.kafka

WS = "/kafka/failures"
A = header("ok-a", cwd=WS)
A_EVENTS = [
    plain(0, "turn/start", {"turn": 1}),
    user(1, "alpha apricot question"),
    assistant(2, "alpha apricot answer"),
]
B = header("bad-b", cwd=WS)
B_EVENTS = [
    plain(0, "turn/start", {"turn": 1}),
    user(1, "bravo bluebird question"),
    assistant(2, "bravo bluebird summary", op=(1, 1), sources=[1]),
    user(3, "bravo bluebird follow-up"),
]
C = header("ok-c", cwd=WS)
C_EVENTS = [user(0, "charlie cherry question"), assistant(1, "charlie cherry answer")]
DISK_IO = "disk I/O error"
NO_SPACE = "No space left on device"


async def publish(
    producer: RawProducer, topic: str, sessions: Sequence[SessionSpec]
) -> list[tuple[RecordMetadata, bytes]]:
    """Each session's header record, then its events record; (metadata, value) each."""
    out = []
    for h, events in sessions:
        for record in (header_record(h), events_record(str(h["id"]), events)):
            value = orjson.dumps(record)
            out.append((await producer.send(topic, value, key=routing_key(h)), value))
    return out


async def wait_caught_up(data: Path, topics: Topics) -> None:
    await wait_until(
        lambda: caught_up(data, topics.bootstrap, topics.events),
        timeout=30,
        what="the indexer to commit every record of the events topic",
    )


def reference(tmp_path: Path, sessions: Sequence[SessionSpec]) -> dict[str, Any]:
    data = tmp_path / "reference"
    build_store(data, sessions)
    return snapshot(data, offsets=False)


# ---- a failing record: dead-lettered, the rest stored --------------------------------------

# step -> (inject for B's events, dead-letter code, dead-letter reason)
RecordFailure = tuple[Callable[[pytest.MonkeyPatch], Any], str, str]
RECORD_FAILURES: dict[str, RecordFailure] = {
    "rows": (
        lambda mp: inject(
            mp,
            SqliteTables,
            "insert_events",
            lambda: sqlite3.OperationalError(DISK_IO),
            when=events_batch_of("bad-b"),
        ),
        "SESSIONQ_INTERNAL",
        f"internal error: OperationalError: {DISK_IO}",
    ),
    "index-document": (
        lambda mp: inject(
            mp,
            index_module,
            "document",
            lambda: ValueError("term too long for the index"),
            when=doc_of("bad-b", 3),
        ),
        "SESSION_QUERY_INDEX_FAILED",
        "index document bad-b#3: term too long for the index",
    ),
    "index-upsert": (
        lambda mp: inject(
            mp,
            TantivyIndex,
            "upsert",
            # Not a full disk: that one replays the batch (tests/abuse/test_disk_full.py).
            lambda: OSError(DISK_IO),
            when=docs_of("bad-b"),
            after=True,
        ),
        "SESSIONQ_INTERNAL",
        f"internal error: OSError: {DISK_IO}",
    ),
}


@pytest.mark.parametrize("step", sorted(RECORD_FAILURES))
async def test_a_record_failing_to_apply_is_dead_lettered_and_the_others_are_stored(
    kafka_bootstrap: str,
    topic_factory: TopicFactory,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    step: str,
) -> None:
    topics = await create_topics(kafka_bootstrap, topic_factory, events=1)
    data = tmp_path / "data"
    make, code, reason = RECORD_FAILURES[step]
    injection = make(monkeypatch)
    async with RawProducer(kafka_bootstrap) as producer:
        sessions = [(A, A_EVENTS), (B, B_EVENTS), (C, C_EVENTS)]
        sent = await publish(producer, topics.events, sessions)
    async with running_indexer(data, topics.kafka(), batch_ms=20) as running:
        await wait_caught_up(data, topics)
        counters = running.indexer.counters
        assert (counters.dead_lettered, counters.applied) == (1, 5)

    assert injection.fired == 1
    letters = dead_letters(await read_topic(kafka_bootstrap, topics.dlq))
    assert len(letters) == 1
    meta, value = sent[3]  # B's events record
    assert_dead_letter(
        letters[0],
        meta,
        topic=topics.events,
        key=routing_key(B).encode(),
        value=value,
        code=code,
        reason=reason,
    )
    assert letters[0]["reason"] == reason
    # Nothing of B's events in the store: its header (a record of its own) and A, C.
    expected = reference(tmp_path, [(A, A_EVENTS), (B, []), (C, C_EVENTS)])
    assert snapshot(data, offsets=False) == expected
    assert stored_offsets(data) == {(topics.events, 0): len(sent)}


# ---- a lost batch: replayed from the stored offsets, nothing dead-lettered -----------------


def _fail_batch(mp: pytest.MonkeyPatch, step: str) -> Callable[[], int]:
    """Fail the next two batches at ``step``; returns how often it fired."""
    if step == "index-commit":
        inj = inject(mp, TantivyIndex, "commit", lambda: OSError(NO_SPACE), times=2)
        return lambda: inj.fired
    if step == "sqlite-commit":
        # Step 3 of the commit (rows + offsets in one SQLite transaction), after the
        # Tantivy commit went through.
        inj = inject(
            mp,
            SqliteTables,
            "store_offsets",
            lambda: sqlite3.OperationalError(DISK_IO),
            times=2,
        )
        return lambda: inj.fired
    assert step == "transaction-lost"
    loss = TransactionLoss("bad-b", times=2)
    loss.install(mp)
    return lambda: loss.fired


@pytest.mark.parametrize("step", ["index-commit", "sqlite-commit", "transaction-lost"])
async def test_a_lost_batch_is_replayed_from_the_stored_offsets_and_nothing_is_lost(
    kafka_bootstrap: str,
    topic_factory: TopicFactory,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    step: str,
) -> None:
    monkeypatch.setattr(indexer_module, "RETRY_FIRST_S", 0.01)
    topics = await create_topics(kafka_bootstrap, topic_factory, events=1)
    data = tmp_path / "data"
    async with RawProducer(kafka_bootstrap) as producer:
        first = await publish(producer, topics.events, [(A, A_EVENTS)])
        async with running_indexer(data, topics.kafka(), batch_ms=20) as running:
            await wait_caught_up(data, topics)
            assert stored_offsets(data) == {(topics.events, 0): len(first)}
            # The failure hits batches after the first commit: the replay must start at
            # the stored offsets, not at the beginning of the topic.
            fired = _fail_batch(monkeypatch, step)
            later = await publish(producer, topics.events, [(B, B_EVENTS), (C, C_EVENTS)])
            await wait_caught_up(data, topics)
            assert fired() == 2
            assert running.indexer.counters.dead_lettered == 0

    assert sum((await end_offsets(kafka_bootstrap, topics.dlq)).values()) == 0
    assert stored_offsets(data) == {(topics.events, 0): len(first) + len(later)}
    assert snapshot(data, offsets=False) == reference(
        tmp_path, [(A, A_EVENTS), (B, B_EVENTS), (C, C_EVENTS)]
    )
