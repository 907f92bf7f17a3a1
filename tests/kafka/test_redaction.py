"""``--redact-secrets store`` over a real broker: hosts publish raw events; every replica's
indexer redacts them before its rows are written, identically, so no replica's data dir
holds a secret and the replicas store the same bytes."""

from __future__ import annotations

from pathlib import Path

import pytest

from indexer.settings import IndexerSettings
from indexer.stats import store_stats
from tests.erasure_scan import data_files
from tests.fixtures.kafka import TopicFactory
from tests.fixtures.waiting import wait_until
from tests.kafka.harness import caught_up, create_topics, indexer_with, publish
from tests.redaction.corpus import secrets_log
from tests.redaction.labelled import KINDS
from tests.redaction.test_end_to_end import probes, stored_raw

pytestmark = pytest.mark.kafka


async def test_store_mode_redacts_alike_on_every_replica(
    kafka_bootstrap: str, topic_factory: TopicFactory, tmp_path: Path
) -> None:
    topics = await create_topics(kafka_bootstrap, topic_factory, events=3)
    kafka = topics.kafka()
    paths, items = secrets_log(tmp_path / "logs")
    publisher = await publish(kafka_bootstrap, topics.events, paths)
    assert not publisher.rejected
    a, b = tmp_path / "replica-a", tmp_path / "replica-b"

    def settings(data: Path) -> IndexerSettings:
        return IndexerSettings(data=data, kafka=kafka, batch_ms=20, redact_secrets="store")

    async with indexer_with(settings(a)), indexer_with(settings(b)):

        async def both_caught_up() -> bool:
            return await caught_up(a, kafka_bootstrap, topics.events) and await caught_up(
                b, kafka_bootstrap, topics.events
            )

        await wait_until(both_caught_up, timeout=60, what="both replicas to catch up")
    raw_a, raw_b = stored_raw(a), stored_raw(b)
    assert b"[REDACTED:" in raw_a and raw_a == raw_b
    wanted = probes(items)
    for data in (a, b):
        everything = b"\n".join(p.read_bytes() for p in data_files(data))
        assert [p for p in wanted if p in everything] == []
        assert [p for p in wanted if p in stored_raw(data)] == []
    assert store_stats(a).sessions == store_stats(b).sessions == 2
    counts = store_stats(a).redactions
    assert set(counts) >= set(KINDS) and counts == store_stats(b).redactions
