"""A group member's committed offsets: committing only what it still owns, and the lag
behind what it committed (the worker group's and the nodes' group's one copy)."""

from __future__ import annotations

from collections.abc import Collection, Mapping

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.structs import OffsetAndMetadata

from indexer.kafka.client import kafka_access
from indexer.settings import KafkaSettings

__all__ = ["commit_owned", "committed_lag"]


async def commit_owned(
    consumer: AIOKafkaConsumer,
    kafka: KafkaSettings,
    topic: str,
    owned: Collection[int],
    offsets: Mapping[int, int],
) -> None:
    """Commit next offsets of ``topic`` per partition, only of partitions in ``owned``: a
    partition revoked meanwhile belongs to another member now, whose commits count."""
    todo = {
        TopicPartition(topic, p): OffsetAndMetadata(o, "") for p, o in offsets.items() if p in owned
    }
    if todo:
        async with kafka_access(kafka):
            await consumer.commit(todo)


async def committed_lag(
    consumer: AIOKafkaConsumer, tps: Collection[TopicPartition]
) -> dict[int, int]:
    """Records not yet committed, per partition of ``tps`` (end offset − committed)."""
    if not tps:
        return {}
    ends = await consumer.end_offsets(list(tps))
    out = {}
    for tp in tps:
        committed = await consumer.committed(tp)
        out[tp.partition] = max(0, ends[tp] - (committed or 0))
    return out
