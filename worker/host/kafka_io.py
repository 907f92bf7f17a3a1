"""aiokafka for the hosts' side of the protocol: the reply reader and topic creation
(the workers' consumer group is ``worker.transports.kafka.group``); domain code sees
plain values only."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aiokafka import AIOKafkaConsumer
from aiokafka.errors import TopicAuthorizationFailedError

from indexer.errors import KafkaAccessError
from indexer.kafka.backoff import backed_off
from indexer.kafka.client import (
    InRecord,
    assign_all,
    connection_options,
    kafka_access,
    stop_client,
    to_records,
)
from indexer.settings import KafkaSettings

__all__ = ["ReplyReader", "create_topics", "topic_partitions"]


class ReplyReader:
    """Reads every partition of a reply topic from its current end (hosts filter by id)."""

    def __init__(self, kafka: KafkaSettings, topic: str, *, client_id: str) -> None:
        self.topic = topic
        self.kafka = kafka
        self._consumer = AIOKafkaConsumer(
            **connection_options(kafka),
            client_id=client_id,
            enable_auto_commit=False,
            auto_offset_reset="latest",
        )
        backed_off(self._consumer, kafka.bootstrap)

    async def start(self) -> None:
        async with kafka_access(self.kafka):
            await self._consumer.start()
            tps = await assign_all(self._consumer, self.topic)
            await self._consumer.seek_to_end(*tps)
            for tp in tps:  # materialize positions before any request is sent
                await self._consumer.position(tp)

    async def poll(self, timeout_ms: int) -> list[InRecord]:
        return to_records(await self._consumer.getmany(timeout_ms=timeout_ms, max_records=500))

    async def stop(self) -> None:
        await stop_client(self._consumer)


async def topic_partitions(kafka: KafkaSettings, topics: Sequence[str]) -> dict[str, int]:
    """How many partitions each topic has now (0: it does not exist), from one metadata
    request of a client of its own."""
    consumer = AIOKafkaConsumer(**connection_options(kafka), enable_auto_commit=False)
    try:
        async with kafka_access(kafka):
            await consumer.start()
            await consumer._client.force_metadata_update()
        return {t: len(consumer.partitions_for_topic(t) or ()) for t in topics}
    finally:
        await stop_client(consumer)


async def create_topics(
    kafka: KafkaSettings,
    topics: Sequence[tuple[str, int, dict[str, str]]],
    *,
    replication_factor: int = 1,
) -> dict[str, str]:
    """Create (name, partitions, configs) topics with ``replication_factor`` replicas;
    existing ones are left as they are.

    Returns name -> "created" | "exists".
    """
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic
    from aiokafka.errors import TopicAlreadyExistsError

    admin = AIOKafkaAdminClient(**connection_options(kafka), request_timeout_ms=30000)
    async with kafka_access(kafka):
        await admin.start()
    try:
        async with kafka_access(kafka):
            existing = set(await admin.list_topics())
            out: dict[str, str] = {name: "exists" for name, _, _ in topics if name in existing}
            todo = [
                NewTopic(
                    name,
                    num_partitions=parts,
                    replication_factor=replication_factor,
                    topic_configs=cfg,
                )
                for name, parts, cfg in topics
                if name not in existing
            ]
            for topic in todo:
                try:
                    response: Any = await admin.create_topics([topic])
                except TopicAlreadyExistsError:
                    out[topic.name] = "exists"
                    continue
                _raise_topic_errors(response)
                out[topic.name] = "created"
            return out
    finally:
        await admin.close()


def _raise_topic_errors(response: Any) -> None:
    """aiokafka returns per-topic errors in the response instead of raising them."""
    from aiokafka.errors import TopicAlreadyExistsError, for_code

    for name, code, *rest in getattr(response, "topic_errors", ()):
        if not code:
            continue
        error = for_code(code)
        if error is TopicAlreadyExistsError:
            continue
        if error is TopicAuthorizationFailedError:
            raise TopicAuthorizationFailedError({name})
        detail = rest[0] if rest and rest[0] else error.__name__
        raise KafkaAccessError(f"cannot create topic {name!r}: {detail}")
