"""sessionq's topics and their configuration (DESIGN.md "Topics")."""

from __future__ import annotations

from indexer.kafka.dead_letter import DLQ_MAX_BYTES
from indexer.kafka.group import create_topics
from indexer.settings import KafkaSettings
from worker.contract.envelopes import MAX_REQUEST_BYTES

DAY_MS = 24 * 3600 * 1000


def topic_specs(kafka: KafkaSettings, partitions: int) -> list[tuple[str, int, dict[str, str]]]:
    """Events are the source of truth (kept forever); requests, replies and dead letters
    are transient and expire."""
    return [
        (
            kafka.events_topic,
            partitions,
            {
                "retention.ms": "-1",
                "retention.bytes": "-1",
                "cleanup.policy": "delete",
                "max.message.bytes": "8388608",
            },
        ),
        (
            kafka.requests_topic,
            partitions,
            {"retention.ms": str(DAY_MS), "max.message.bytes": str(MAX_REQUEST_BYTES)},
        ),
        (
            kafka.replies_topic,
            partitions,
            {"retention.ms": str(DAY_MS), "max.message.bytes": "8388608"},
        ),
        (
            kafka.dlq_topic,
            1,
            {"retention.ms": str(30 * DAY_MS), "max.message.bytes": str(DLQ_MAX_BYTES)},
        ),
    ]


async def ensure_topics(
    kafka: KafkaSettings,
    partitions: int = 3,
    *,
    replication_factor: int = 1,
    min_insync_replicas: int | None = None,
) -> dict[str, str]:
    specs = topic_specs(kafka, partitions)
    if min_insync_replicas is not None:
        specs = [
            (name, parts, {**cfg, "min.insync.replicas": str(min_insync_replicas)})
            for name, parts, cfg in specs
        ]
    return await create_topics(kafka, specs, replication_factor=replication_factor)
