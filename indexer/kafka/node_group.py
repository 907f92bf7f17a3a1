"""aiokafka for ``sessionq node``: one consumer-group member on the events and the
requests topic with the co-partitioning assignor (``indexer.kafka.assignor``), the
standby copies' manually assigned events consumer, and the default partitioner. With
``client``, ``group`` and ``assignor`` the only modules that import aiokafka.

The group commits request offsets only; an events partition is positioned by the offset
stored with its partition's data (``seek_events``), as the full-replica indexer does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition
from aiokafka.errors import KafkaError
from aiokafka.partitioner import murmur2

from indexer.kafka.assignor import CoPartitionAssignor, LocalState
from indexer.kafka.backoff import backed_off
from indexer.kafka.client import (
    LAG_TIMEOUT_S,
    InRecord,
    connection_options,
    kafka_access,
    stop_client,
    to_records,
)
from indexer.kafka.offsets import commit_owned, committed_lag
from indexer.settings import KafkaSettings

__all__ = ["CopySource", "LocalState", "NodeGroup", "partition_for"]

FETCH_OPTIONS = {"max_partition_fetch_bytes": 8 * 1024 * 1024, "fetch_max_bytes": 32 * 1024 * 1024}


def partition_for(key: bytes, partitions: int) -> int:
    """The partition Kafka's default partitioner (murmur2, the Java client's and
    aiokafka's) picks for a keyed record."""
    return int(murmur2(key) & 0x7FFFFFFF) % partitions


class _Listener(ConsumerRebalanceListener):  # type: ignore[misc]
    def __init__(
        self,
        group: NodeGroup,
        on_revoked: Callable[[], Awaitable[None]],
        on_assigned: Callable[[list[int], list[int]], Awaitable[None]],
    ) -> None:
        self._group = group
        self._on_revoked = on_revoked
        self._on_assigned = on_assigned

    async def on_partitions_revoked(self, revoked: Sequence[TopicPartition]) -> None:
        await self._on_revoked()

    async def on_partitions_assigned(self, assigned: Sequence[TopicPartition]) -> None:
        owned = sorted({tp.partition for tp in assigned if tp.topic == self._group.events})
        await self._on_assigned(owned, sorted(self._group.assignor.standby))


class NodeGroup:
    """The node's group member: partition p of both topics, or neither."""

    def __init__(
        self,
        kafka: KafkaSettings,
        group: str,
        *,
        standby_replicas: int,
        local: Callable[[], LocalState],
        session_timeout_ms: int,
        client_id: str = "sessionq-node",
    ) -> None:
        self.kafka = kafka
        self.events = kafka.events_topic
        self.topic = kafka.requests_topic  # the requests topic (the worker's source view)
        self.assignor = CoPartitionAssignor((self.events, self.topic), standby_replicas, local)
        self._consumer = AIOKafkaConsumer(
            **connection_options(kafka),
            group_id=group,
            client_id=client_id,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            isolation_level="read_committed",
            partition_assignment_strategy=(self.assignor,),
            session_timeout_ms=session_timeout_ms,
            heartbeat_interval_ms=max(100, session_timeout_ms // 6),
            max_poll_interval_ms=300000,
            **FETCH_OPTIONS,
        )
        backed_off(self._consumer, kafka.bootstrap)

    async def connect(self) -> None:
        async with kafka_access(self.kafka):
            await self._consumer.start()

    async def partition_counts(self, topics: Sequence[str]) -> dict[str, int]:
        """Partitions of each topic (0: it does not exist)."""
        async with kafka_access(self.kafka):
            await self._consumer._client.force_metadata_update()
        return {t: len(self._consumer.partitions_for_topic(t) or ()) for t in topics}

    def join(
        self,
        on_revoked: Callable[[], Awaitable[None]],
        on_assigned: Callable[[list[int], list[int]], Awaitable[None]],
    ) -> None:
        listener = _Listener(self, on_revoked, on_assigned)
        self._consumer.subscribe([self.events, self.topic], listener=listener)

    async def poll(self, timeout_ms: int, max_records: int) -> list[InRecord]:
        async with kafka_access(self.kafka):
            batches = await self._consumer.getmany(timeout_ms=timeout_ms, max_records=max_records)
        return to_records(batches)

    async def seek_events(self, partition: int, offset: int | None) -> None:
        """Position events-p at the stored next offset, or its beginning (nothing when
        this member no longer owns it: the next assignment positions it again)."""
        tp = TopicPartition(self.events, partition)
        if tp not in self._consumer.assignment():
            return
        if offset is None:
            await self._consumer.seek_to_beginning(tp)
        else:
            self._consumer.seek(tp, offset)

    def pause(self, topic: str, partitions: Sequence[int]) -> None:
        """Stop fetching these partitions (those this member still owns: a rebalance may
        have taken some since the caller looked)."""
        self._consumer.pause(*self._owned(topic, partitions))

    def resume(self, topic: str, partitions: Sequence[int]) -> None:
        self._consumer.resume(*self._owned(topic, partitions))

    def _owned(self, topic: str, partitions: Sequence[int]) -> list[TopicPartition]:
        owned = self._consumer.assignment()
        return [tp for tp in (TopicPartition(topic, p) for p in partitions) if tp in owned]

    def assignment(self) -> list[int]:
        """The requests partitions this member owns."""
        return sorted(tp.partition for tp in self._consumer.assignment() if tp.topic == self.topic)

    async def commit(self, offsets: dict[int, int]) -> None:
        """Commit next request offsets (only partitions this member still owns)."""
        owned = set(self.assignment())
        await commit_owned(self._consumer, self.kafka, self.topic, owned, offsets)

    async def lag(self) -> dict[int, int]:
        """Requests not yet committed, per owned partition."""
        tps = [TopicPartition(self.topic, p) for p in self.assignment()]
        return await committed_lag(self._consumer, tps)

    async def end_offsets(self, topic: str, partitions: Sequence[int]) -> dict[int, int] | None:
        """End offsets of ``partitions`` of ``topic``; None when the broker does not
        answer within ``LAG_TIMEOUT_S``."""
        return await _end_offsets(self._consumer, topic, partitions)

    async def stop(self) -> None:
        await stop_client(self._consumer)


async def _end_offsets(
    consumer: AIOKafkaConsumer, topic: str, partitions: Sequence[int]
) -> dict[int, int] | None:
    if not partitions:
        return {}
    tps = [TopicPartition(topic, p) for p in partitions]
    try:
        ends = await asyncio.wait_for(consumer.end_offsets(tps), LAG_TIMEOUT_S)
    except (KafkaError, TimeoutError):
        return None
    return {tp.partition: int(ends[tp]) for tp in tps}


class CopySource:
    """The events partitions this node keeps standby copies of, assigned manually."""

    def __init__(self, kafka: KafkaSettings, *, client_id: str = "sessionq-node-standby") -> None:
        self.kafka = kafka
        self.topic = kafka.events_topic
        self._consumer = AIOKafkaConsumer(
            **connection_options(kafka),
            client_id=client_id,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            isolation_level="read_committed",
            **FETCH_OPTIONS,
        )
        backed_off(self._consumer, kafka.bootstrap)
        self.partitions: list[int] = []

    async def start(self) -> None:
        async with kafka_access(self.kafka):
            await self._consumer.start()

    async def assign(self, offsets: Mapping[int, int | None]) -> None:
        """Copy exactly these partitions, each from its stored next offset (None: from
        the beginning)."""
        self.partitions = sorted(offsets)
        self._consumer.assign([TopicPartition(self.topic, p) for p in self.partitions])
        for p, offset in offsets.items():
            tp = TopicPartition(self.topic, p)
            if offset is None:
                await self._consumer.seek_to_beginning(tp)
            else:
                self._consumer.seek(tp, offset)

    async def seek(self, partition: int, offset: int | None) -> None:
        tp = TopicPartition(self.topic, partition)
        if offset is None:
            await self._consumer.seek_to_beginning(tp)
        else:
            self._consumer.seek(tp, offset)

    async def poll(self, timeout_ms: int, max_records: int) -> list[InRecord]:
        if not self.partitions:
            await asyncio.sleep(timeout_ms / 1000)
            return []
        async with kafka_access(self.kafka):
            batches = await self._consumer.getmany(timeout_ms=timeout_ms, max_records=max_records)
        return to_records(batches)

    async def end_offsets(self, partitions: Sequence[int]) -> dict[int, int] | None:
        return await _end_offsets(self._consumer, self.topic, partitions)

    async def stop(self) -> None:
        await stop_client(self._consumer)
