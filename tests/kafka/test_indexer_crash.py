"""Crash safety of the indexer (DESIGN.md "Roles": offsets commit with the rows, restart
resumes from them, re-applying is a no-op): the real ``sessionq indexer`` process is
SIGKILLed again and again while it ingests the published corpus, and the store it ends
with is exactly the store of one clean in-process pass over the same records."""

from __future__ import annotations

import signal
from functools import partial
from pathlib import Path

import pytest

from indexer.model.records import decode_record
from indexer.store.records.store import Store
from tests.fixtures.kafka import TopicFactory
from tests.fixtures.waiting import wait_until
from tests.kafka.harness import (
    caught_up,
    create_topics,
    end_offsets,
    ingest_reference,
    publish,
    read_topic,
    stored_offsets,
)
from tests.kafka.processes import (
    CliProcess,
    Processes,
)
from tests.snapshots import snapshot

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

# Small batches: many commits, so the kills land before, inside and after them.
FAST_COMMITS = {"SESSIONQ_BATCH_RECORDS": "7", "SESSIONQ_BATCH_MS": "20"}
# (fraction of the records committed, then kill: "offsets" at once — mid next batch —,
# or "index" as soon as Tantivy commits again — before or just after the SQLite commit
# that stores the offsets, i.e. possibly with the index ahead of the rows).
KILL_AT = (
    (0.0, "offsets"),
    (0.1, "index"),
    (0.3, "offsets"),
    (0.5, "index"),
    (0.7, "offsets"),
    (0.85, "index"),
)


def committed(data: Path) -> int:
    return sum(stored_offsets(data).values())


def index_generation(data: Path) -> bytes:
    """``meta.json`` of the Tantivy index: every Tantivy commit rewrites it."""
    try:
        return (data / "tantivy" / "meta.json").read_bytes()
    except FileNotFoundError:
        return b""


async def test_indexer_sigkilled_while_ingesting_converges_to_a_clean_ingest(
    kafka_bootstrap: str, topic_factory: TopicFactory, corpus_dir: Path, tmp_path: Path
) -> None:
    topics = await create_topics(kafka_bootstrap, topic_factory, events=3)
    await publish(kafka_bootstrap, topics.events, [corpus_dir])
    ends = await end_offsets(kafka_bootstrap, topics.events)
    total = sum(ends.values())
    data = tmp_path / "data"
    procs = Processes(tmp_path, topics)
    args = ("indexer", "--bootstrap", kafka_bootstrap, "--data", str(data))

    def spawn() -> CliProcess:
        return procs.spawn("indexer", *args, env=FAST_COMMITS)

    def past(proc: CliProcess, goal: int) -> bool:
        return committed(data) >= goal or not proc.alive()

    def index_moved(proc: CliProcess, generation: bytes) -> bool:
        return index_generation(data) != generation or not proc.alive()

    progress: list[int] = []
    try:
        for fraction, trigger in KILL_AT:
            before = committed(data)
            proc = spawn()
            # Let the restarted process commit past the mark (for 0.0: its first commit).
            goal = max(before + 1, int(total * fraction))
            await wait_until(
                partial(past, proc, goal),
                timeout=60,
                what=f"the indexer to commit {goal} of {total} records",
                interval=0.01,
            )
            if trigger == "index":
                await wait_until(
                    partial(index_moved, proc, index_generation(data)),
                    timeout=60,
                    what="the next Tantivy commit",
                    interval=0.001,
                )
            assert proc.alive(), proc.log()
            assert proc.kill(signal.SIGKILL) == -signal.SIGKILL
            progress.append(committed(data))
            assert progress[-1] >= before  # a restart resumes, it never goes back
        assert progress[-1] < total, "the corpus was consumed before the last kill"

        final = spawn()
        await wait_until(
            lambda: caught_up(data, kafka_bootstrap, topics.events),
            timeout=60,
            what="the restarted indexer to catch up",
            interval=0.1,
        )
        assert final.kill(signal.SIGKILL) == -signal.SIGKILL
    finally:
        procs.stop_all()

    # The reference: every record of the topic applied once, in order, in this process.
    records = await read_topic(kafka_bootstrap, topics.events)
    assert len(records) == total
    reference = tmp_path / "reference"
    store = Store(reference)
    try:
        for record in records:
            store.apply(decode_record(record.value))
        store.commit({(topics.events, p): end for p, end in ends.items() if end})
    finally:
        store.close()

    assert snapshot(data) == snapshot(reference)  # rows, raw JSON, documents and offsets
    assert stored_offsets(data) == {(topics.events, p): end for p, end in ends.items() if end}
    # Re-applied records were no-ops, never conflicts: nothing was dead-lettered.
    assert await read_topic(kafka_bootstrap, topics.dlq) == []
    # And it is the store a plain file ingest of the corpus builds.
    files = tmp_path / "files"
    ingest_reference(files, [corpus_dir])
    assert snapshot(data, offsets=False) == snapshot(files, offsets=False)
