"""The workers' consumer group on the requests topic (aiokafka, behind plain values; the
hosts' side is ``worker.host.kafka_io``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition

from indexer.kafka.backoff import backed_off
from indexer.kafka.client import (
    InRecord,
    connection_options,
    kafka_access,
    stop_client,
    to_records,
)
from indexer.kafka.offsets import commit_owned, committed_lag
from indexer.settings import KafkaSettings

__all__ = ["GroupSource"]


class _Listener(ConsumerRebalanceListener):  # type: ignore[misc]
    def __init__(
        self,
        on_revoked: Callable[[list[int]], Awaitable[None]],
        on_assigned: Callable[[list[int]], Awaitable[None]],
    ) -> None:
        self._on_revoked = on_revoked
        self._on_assigned = on_assigned

    async def on_partitions_revoked(self, revoked: Sequence[TopicPartition]) -> None:
        await self._on_revoked([tp.partition for tp in revoked])

    async def on_partitions_assigned(self, assigned: Sequence[TopicPartition]) -> None:
        await self._on_assigned([tp.partition for tp in assigned])


class GroupSource:
    """A consumer-group member on the requests topic with manual offset commits."""

    def __init__(self, kafka: KafkaSettings, topic: str, group: str, *, client_id: str) -> None:
        self.topic = topic
        self.kafka = kafka
        self._consumer = AIOKafkaConsumer(
            **connection_options(kafka),
            group_id=group,
            client_id=client_id,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            session_timeout_ms=10000,
            heartbeat_interval_ms=1000,
            max_poll_interval_ms=300000,
        )
        backed_off(self._consumer, kafka.bootstrap)

    async def start(
        self,
        on_revoked: Callable[[list[int]], Awaitable[None]],
        on_assigned: Callable[[list[int]], Awaitable[None]],
    ) -> None:
        async with kafka_access(self.kafka):
            await self._consumer.start()
        self._consumer.subscribe([self.topic], listener=_Listener(on_revoked, on_assigned))

    async def poll(self, timeout_ms: int, max_records: int) -> list[InRecord]:
        """The next records; a group or topic this user may not read raises
        ``KafkaAccessError``."""
        async with kafka_access(self.kafka):
            batches = await self._consumer.getmany(timeout_ms=timeout_ms, max_records=max_records)
        return to_records(batches)

    async def commit(self, offsets: dict[int, int]) -> None:
        """Commit next offsets per partition (only partitions this member still owns)."""
        owned = {tp.partition for tp in self._consumer.assignment()}
        await commit_owned(self._consumer, self.kafka, self.topic, owned, offsets)

    def assignment(self) -> list[int]:
        return sorted(tp.partition for tp in self._consumer.assignment())

    async def lag(self) -> dict[int, int]:
        return await committed_lag(self._consumer, self._consumer.assignment())

    async def stop(self) -> None:
        await stop_client(self._consumer)
