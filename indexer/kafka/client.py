"""aiokafka for both roles: plain record values, manual partition assignment, the
indexer's events consumer and the idempotent producer every role uses. With
``indexer.kafka.group`` the only modules that import aiokafka."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.errors import (
    KafkaTimeoutError,
    MessageSizeTooLargeError,
    UnknownTopicOrPartitionError,
)

from indexer.errors import UndeliverableError


@dataclass(frozen=True, slots=True)
class InRecord:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp_ms: int
    headers: tuple[tuple[str, bytes], ...] = ()


def to_records(batches: dict[Any, list[Any]]) -> list[InRecord]:
    """aiokafka's ``getmany`` result as plain values, partition by partition."""
    return [
        InRecord(
            tp.topic,
            tp.partition,
            m.offset,
            m.key,
            m.value,
            m.timestamp,
            tuple((k, v) for k, v in (m.headers or ())),
        )
        for tp, msgs in batches.items()
        for m in msgs
    ]


async def assign_all(consumer: AIOKafkaConsumer, topic: str) -> list[TopicPartition]:
    """Manually assign every partition of ``topic`` (refreshing metadata once if the
    topic is not known yet); a missing topic is a clear error, never an empty assignment."""
    parts = consumer.partitions_for_topic(topic)
    if not parts:
        await consumer._client.force_metadata_update()
        parts = consumer.partitions_for_topic(topic)
    if not parts:
        raise RuntimeError(f'topic "{topic}" does not exist')
    tps = [TopicPartition(topic, p) for p in sorted(parts)]
    consumer.assign(tps)
    return tps


class EventsSource:
    """Every partition of one topic, assigned manually (no group), positioned by the
    offsets stored with the data."""

    def __init__(self, bootstrap: str, topic: str, *, client_id: str = "sessionq-indexer") -> None:
        self.topic = topic
        self._consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap,
            client_id=client_id,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            isolation_level="read_committed",
            max_partition_fetch_bytes=8 * 1024 * 1024,
            fetch_max_bytes=32 * 1024 * 1024,
        )
        self.partitions: list[int] = []

    async def start(self, offsets: Mapping[tuple[str, int], int]) -> None:
        await self._consumer.start()
        tps = await assign_all(self._consumer, self.topic)
        self.partitions = [tp.partition for tp in tps]
        await self.seek(offsets)

    async def seek(self, offsets: Mapping[tuple[str, int], int]) -> None:
        """Position every partition at its stored next offset, or the beginning."""
        fresh = []
        for p in self.partitions:
            tp = TopicPartition(self.topic, p)
            stored = offsets.get((self.topic, p))
            if stored is None:
                fresh.append(tp)
            else:
                self._consumer.seek(tp, stored)
        if fresh:
            await self._consumer.seek_to_beginning(*fresh)

    async def poll(self, timeout_ms: int, max_records: int) -> list[InRecord]:
        return to_records(
            await self._consumer.getmany(timeout_ms=timeout_ms, max_records=max_records)
        )

    async def lag(self) -> dict[int, int]:
        """Records not yet consumed per partition (end offset - position)."""
        tps = [TopicPartition(self.topic, p) for p in self.partitions]
        ends = await self._consumer.end_offsets(tps)
        out = {}
        for tp in tps:
            pos = await self._consumer.position(tp)
            out[tp.partition] = max(0, ends[tp] - pos)
        return out

    async def stop(self) -> None:
        await self._consumer.stop()


class Producer:
    """An idempotent (acks=all) producer; ``send`` resolves once the broker acknowledged."""

    def __init__(
        self,
        bootstrap: str,
        *,
        client_id: str,
        max_request_size: int = 8 * 1024 * 1024,
        request_timeout_ms: int = 40000,
        linger_ms: int = 0,
    ) -> None:
        """``linger_ms`` 0: requests and replies are latency-bound, one record at a time;
        bulk publishers may pass a few ms to batch."""
        self._producer = AIOKafkaProducer(
            bootstrap_servers=bootstrap,
            client_id=client_id,
            enable_idempotence=True,
            acks="all",
            linger_ms=linger_ms,
            max_request_size=max_request_size,
            request_timeout_ms=request_timeout_ms,
        )

    async def start(self) -> None:
        await self._producer.start()

    async def send(
        self,
        topic: str,
        value: bytes,
        *,
        key: bytes | None = None,
        headers: Sequence[tuple[str, bytes]] = (),
    ) -> None:
        """Send and wait for the acknowledgement; a record the broker can never take
        (unknown topic, too large) raises ``UndeliverableError``."""
        try:
            await self._producer.send_and_wait(topic, value, key=key, headers=list(headers) or None)
        except (UnknownTopicOrPartitionError, MessageSizeTooLargeError, KafkaTimeoutError) as exc:
            raise UndeliverableError(f"cannot deliver to {topic!r}: {type(exc).__name__}") from exc

    async def enqueue(
        self,
        topic: str,
        value: bytes,
        *,
        key: bytes | None = None,
        headers: Sequence[tuple[str, bytes]] = (),
    ) -> asyncio.Future[Any]:
        """Queue a record; await the returned future for its acknowledgement."""
        fut: asyncio.Future[Any] = await self._producer.send(
            topic, value, key=key, headers=list(headers) or None
        )
        return fut

    async def flush(self) -> None:
        await self._producer.flush()

    async def stop(self) -> None:
        await self._producer.stop()
