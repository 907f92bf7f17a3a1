"""sessionq's topics and their configuration (DESIGN.md "Topics"), and what to say when
existing topics have other partition counts than sessionq expects of them."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Final

from indexer.kafka.dead_letter import DLQ_MAX_BYTES
from indexer.settings import KafkaSettings
from worker.contract.envelopes import MAX_REQUEST_BYTES
from worker.host.kafka_io import create_topics, topic_partitions
from worker.settings import TopicsSettings

log = logging.getLogger("sessionq.topics")
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


def _alter(kafka: KafkaSettings, topic: str, partitions: int) -> str:
    """The command that gives an existing topic more partitions (Kafka's own tool)."""
    return (
        f"kafka-topics.sh --bootstrap-server {kafka.bootstrap} --alter --topic {topic}"
        f" --partitions {partitions}"
    )


MOVES: Final = (
    "adding partitions moves workspaces to other partitions: partitioned nodes need the"
    " topics recreated and the logs republished instead"
)


def existing_counts_warning(
    kafka: KafkaSettings, specs: list[tuple[str, int, dict[str, str]]], counts: Mapping[str, int]
) -> str | None:
    """One line on the existing topics whose partition count is not the one asked for
    (``topics create`` leaves an existing topic as it is); None when all match."""
    groups: dict[tuple[int, int], list[str]] = {}
    for name, wanted, _ in specs:
        has = counts.get(name, 0)
        if has not in (0, wanted):
            groups.setdefault((has, wanted), []).append(name)
    if not groups:
        return None
    said = "; ".join(
        f"{', '.join(names)} {'exists' if len(names) == 1 else 'exist'} with {has}"
        f" partition{'' if has == 1 else 's'}, not {wanted}"
        for (has, wanted), names in groups.items()
    )
    (_, wanted), names = next(iter(groups.items()))
    more = " (and alike for the others)" if len(names) > 1 or len(groups) > 1 else ""
    return (
        f"{said}: existing topics are left as they are; to change one:"
        f" {_alter(kafka, names[0], wanted)}{more}; {MOVES}"
    )


async def partition_warning(
    kafka: KafkaSettings, partitions: int, existing: list[str]
) -> str | None:
    """``topics create``'s warning about the ``existing`` topics (``existing_counts_warning``)."""
    if not existing:
        return None
    counts = await topic_partitions(kafka, existing)
    return existing_counts_warning(kafka, topic_specs(kafka, partitions), counts)


def unequal_warning(kafka: KafkaSettings, events: int, requests: int) -> str | None:
    """The requests and events topics should be co-partitioned (``topic_specs``)."""
    if events == requests:
        return None
    topic, wanted = (
        (kafka.events_topic, requests) if events < requests else (kafka.requests_topic, events)
    )
    return (
        f"{kafka.requests_topic} has {requests} partitions and {kafka.events_topic} {events}:"
        " `sessionq topics create` makes them equal (partitioned nodes need that; a worker"
        f" answers either way); to make them equal: {_alter(kafka, topic, wanted)}; {MOVES}"
    )


def rebuilt_warning(kafka: KafkaSettings, before: int, now: int) -> str:
    """A node whose stores were built on another partition count than the topics have."""
    return (
        f"{kafka.events_topic} and {kafka.requests_topic} have {now} partitions, but this"
        f" node's stores were built on {before}: a workspace may now route to a partition"
        " whose store does not hold its sessions; recreate the topics, republish the logs"
        " and start the nodes on empty data dirs"
    )


async def warn_of_unequal_partitions(kafka: KafkaSettings) -> None:
    """At a worker's start: log the partition counts, and a warning when the requests and
    events topics differ."""
    counts = await topic_partitions(kafka, [kafka.events_topic, kafka.requests_topic])
    events, requests = counts[kafka.events_topic], counts[kafka.requests_topic]
    log.info(
        "%s has %d partitions, %s %d", kafka.events_topic, events, kafka.requests_topic, requests
    )
    warning = unequal_warning(kafka, events, requests)
    if warning is not None:
        log.warning("%s", warning)
