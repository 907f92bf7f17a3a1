"""sessionq's topics and their configuration (DESIGN.md "Topics")."""

from __future__ import annotations

from indexer.kafka.dead_letter import DLQ_MAX_BYTES
from indexer.kafka.group import create_topics
from indexer.settings import KafkaSettings
from worker.contract.envelopes import MAX_REQUEST_BYTES
from worker.settings import TopicsSettings

DAY_MS = 24 * 3600 * 1000
EVENTS_RETENTION_DAYS: int = TopicsSettings.model_fields["events_retention_days"].default


def events_config(retention_days: int) -> dict[str, str]:
    """The events topic's configuration. A finite retention is what lets erased data
    leave Kafka; it is safe because a new replica restores a snapshot and replays only
    what came after it (docs/operations.md: snapshot interval well under the retention).
    Segments roll daily, so a record is gone at most a day (+ the broker's retention
    check) after its retention. ``retention_days`` 0 keeps events forever."""
    config = {
        "retention.bytes": "-1",
        "cleanup.policy": "delete",
        "max.message.bytes": "8388608",
    }
    if retention_days == 0:
        return {"retention.ms": "-1", **config}
    return {"retention.ms": str(retention_days * DAY_MS), "segment.ms": str(DAY_MS), **config}


# The partitioned nodes' global lineage (``indexer.lineage``): compacted, keyed by session
# id; a deleted session is a tombstone, gone after ``delete.retention.ms``.
LINEAGE_CONFIG = {
    "cleanup.policy": "compact",
    "delete.retention.ms": str(DAY_MS),
    "max.message.bytes": "1048576",
}


def topic_specs(
    kafka: KafkaSettings, partitions: int, events_retention_days: int = EVENTS_RETENTION_DAYS
) -> list[tuple[str, int, dict[str, str]]]:
    """Events are the source of truth, kept ``events_retention_days``; requests, replies
    and dead letters are transient and expire sooner. Events and requests have the same
    partition count, so partition p of each holds the same workspaces (partitioned
    nodes need that); the lineage topic is compacted."""
    return [
        (kafka.events_topic, partitions, events_config(events_retention_days)),
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
        (kafka.lineage_topic, partitions, LINEAGE_CONFIG),
    ]


async def ensure_topics(
    kafka: KafkaSettings,
    partitions: int = 3,
    *,
    replication_factor: int = 1,
    min_insync_replicas: int | None = None,
    events_retention_days: int = EVENTS_RETENTION_DAYS,
) -> dict[str, str]:
    specs = topic_specs(kafka, partitions, events_retention_days)
    if min_insync_replicas is not None:
        specs = [
            (name, parts, {**cfg, "min.insync.replicas": str(min_insync_replicas)})
            for name, parts, cfg in specs
        ]
    return await create_topics(kafka, specs, replication_factor=replication_factor)
