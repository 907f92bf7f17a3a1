"""aiokafka against the session's real broker: admin, idempotent produce, group consume."""

from __future__ import annotations

import asyncio

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.structs import TopicPartition

from tests.fixtures.kafka import TopicFactory, UniqueName
from tests.kafka.broker import Broker

pytestmark = pytest.mark.kafka


async def test_topic_listed_and_described(
    kafka_bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = await topic_factory(partitions=3)
    admin = AIOKafkaAdminClient(bootstrap_servers=kafka_bootstrap)
    await admin.start()
    try:
        assert topic in await admin.list_topics()
        (described,) = await admin.describe_topics([topic])
        assert described["error_code"] == 0
        assert sorted(p["partition"] for p in described["partitions"]) == [0, 1, 2]
        cluster = await admin.describe_cluster()
        assert len(cluster["brokers"]) == 1
    finally:
        await admin.close()


async def test_idempotent_produce_then_group_consume_and_commit(
    kafka_bootstrap: str, topic_factory: TopicFactory, unique_name: UniqueName
) -> None:
    topic = await topic_factory(partitions=3)
    group = unique_name("group")
    sent = {f"key-{i}".encode(): f"value-{i}".encode() for i in range(30)}

    producer = AIOKafkaProducer(
        bootstrap_servers=kafka_bootstrap, enable_idempotence=True, acks="all"
    )
    await producer.start()
    try:
        results = [await producer.send_and_wait(topic, v, key=k) for k, v in sent.items()]
    finally:
        await producer.stop()
    assert {r.partition for r in results} <= {0, 1, 2}
    end_offsets: dict[int, int] = {}
    for r in results:
        end_offsets[r.partition] = max(end_offsets.get(r.partition, 0), r.offset + 1)

    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=kafka_bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    await consumer.start()
    try:
        received: dict[bytes, bytes] = {}
        async with asyncio.timeout(60):
            while len(received) < len(sent):
                batches = await consumer.getmany(timeout_ms=1000)
                for records in batches.values():
                    received.update((m.key, m.value) for m in records if m.key is not None)
        assert received == sent
        await consumer.commit()
        for partition, end in end_offsets.items():
            assert await consumer.committed(TopicPartition(topic, partition)) == end
    finally:
        await consumer.stop()

    # The group's committed offsets are visible to an admin client too.
    admin = AIOKafkaAdminClient(bootstrap_servers=kafka_bootstrap)
    await admin.start()
    try:
        offsets = await admin.list_consumer_group_offsets(group)
    finally:
        await admin.close()
    assert {tp.partition: om.offset for tp, om in offsets.items()} == end_offsets

    # A new member of the same group resumes after the commit: nothing left to read.
    again = AIOKafkaConsumer(
        topic,
        bootstrap_servers=kafka_bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    await again.start()
    try:
        async with asyncio.timeout(30):
            while not again.assignment():
                await asyncio.sleep(0.05)
        batches = await again.getmany(timeout_ms=1500)
        assert not any(batches.values())
        for tp in again.assignment():
            assert await again.position(tp) == end_offsets.get(tp.partition, 0)
    finally:
        await again.stop()


async def test_transactional_produce_read_committed(
    kafka_bootstrap: str, topic_factory: TopicFactory, unique_name: UniqueName
) -> None:
    topic = await topic_factory(partitions=1)
    producer = AIOKafkaProducer(
        bootstrap_servers=kafka_bootstrap, transactional_id=unique_name("tx")
    )
    await producer.start()
    try:
        async with producer.transaction():
            await producer.send_and_wait(topic, b"committed")
        await producer.begin_transaction()
        await producer.send_and_wait(topic, b"aborted")
        await producer.abort_transaction()
        async with producer.transaction():
            await producer.send_and_wait(topic, b"committed-2")
    finally:
        await producer.stop()

    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=kafka_bootstrap,
        isolation_level="read_committed",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    await consumer.start()
    try:
        values: list[bytes | None] = []
        async with asyncio.timeout(30):
            while len(values) < 2:
                batches = await consumer.getmany(timeout_ms=1000)
                values += [m.value for records in batches.values() for m in records]
        assert values == [b"committed", b"committed-2"]
    finally:
        await consumer.stop()


async def test_auto_create_is_disabled(
    kafka_broker: Broker, kafka_bootstrap: str, unique_name: UniqueName
) -> None:
    """The local broker runs with auto.create.topics.enable=false (see deploy/kafka)."""
    if kafka_broker.kind != "local":
        pytest.skip(f"broker settings are not ours ({kafka_broker.kind})")
    missing = unique_name("never-created")
    admin = AIOKafkaAdminClient(bootstrap_servers=kafka_bootstrap)
    await admin.start()
    try:
        (described,) = await admin.describe_topics([missing])
        assert described["error_code"] != 0  # UNKNOWN_TOPIC_OR_PARTITION
        assert missing not in await admin.list_topics()
    finally:
        await admin.close()
