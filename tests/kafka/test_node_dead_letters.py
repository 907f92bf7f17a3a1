"""A node's dead letters on a real broker: a record its partition cannot apply goes to the
dead-letter topic and the records after it are stored; a dead letter the broker refuses
(a DLQ topic with a smaller ``max.message.bytes`` than sessionq creates) goes again
without the original value, and the partition does not stop on it — as the full
replica's indexer does (``indexer.kafka.dead_letter.DeadLetters``, shared by both)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from tests.builders import header, user
from tests.fixtures.kafka import UniqueName
from tests.fixtures.waiting import wait_until
from tests.kafka.harness import product_topics, read_topic
from tests.kafka.nodes import covered, partition_sessions, spawn_node
from tests.kafka.processes import Processes
from tests.kafka.records import RawProducer, dead_letters, events_record, header_record

pytestmark = pytest.mark.kafka
WS = "/node-dlq/ws"


async def _shrink_max_message_bytes(bootstrap: str, topic: str, limit: int) -> None:
    from aiokafka.admin import AIOKafkaAdminClient
    from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.alter_configs(
            [ConfigResource(ConfigResourceType.TOPIC, topic, {"max.message.bytes": str(limit)})]
        )
    finally:
        await admin.close()


async def test_a_refused_dead_letter_goes_without_its_value_and_the_partition_goes_on(
    kafka_bootstrap: str, unique_name: UniqueName, tmp_path: Path
) -> None:
    async with product_topics(kafka_bootstrap, unique_name("ndlq"), 1) as (topics, _):
        await _shrink_max_message_bytes(kafka_bootstrap, topics.dlq, 4096)
        # Valid JSON and envelope, but an event that breaks the envelope rules, and a dead
        # letter (its value in base64) larger than the DLQ topic now takes.
        poison = orjson.dumps(
            events_record("sess-a", [{"type": "user/message", "seq": 1, "data": "x" * 20_000}])
        )
        async with RawProducer(kafka_bootstrap) as producer:
            await producer.send_json(topics.events, header_record(header("sess-a", cwd=WS)), key=WS)
            await producer.send_json(
                topics.events, events_record("sess-a", [user(0, "before")]), key=WS
            )
            refused = await producer.send(topics.events, poison, key=WS)
            await producer.send_json(topics.events, header_record(header("sess-b", cwd=WS)), key=WS)
        procs = Processes(tmp_path, topics)
        try:
            node = spawn_node(procs, topics, unique_name("group"), tmp_path / "node", "node")
            store = node.data / "partitions" / "0"
            await wait_until(
                lambda: (
                    not node.proc.alive()
                    or (
                        covered([node], 1)
                        and set(partition_sessions(store)) >= {"sess-a", "sess-b"}
                    )
                ),
                timeout=120,
                what="the node to store the records around the poison",
                interval=0.5,
            )
            assert node.proc.alive(), node.proc.log()[-2000:]
            letters = dead_letters(await read_topic(kafka_bootstrap, topics.dlq))
            assert len(letters) == 1, letters
            assert letters[0]["source"]["offset"] == refused.offset
            assert letters[0]["code"] == "SESSIONQ_INVALID_RECORD"
            assert letters[0]["value_b64"] is None
            assert letters[0]["value_size"] == len(poison)
            assert "refused" in node.proc.log()
        finally:
            procs.stop_all()
