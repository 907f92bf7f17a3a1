"""The events topic's retention (``--events-retention-days``): finite by default, daily
segments so records leave on time, 0 keeps them forever."""

from __future__ import annotations

from indexer.settings import KafkaSettings
from worker.host.topics import DAY_MS, topic_specs
from worker.settings import TopicsSettings


def events_config(days: int | None = None) -> dict[str, str]:
    kafka = KafkaSettings(bootstrap="b:1")
    specs = topic_specs(kafka, 3) if days is None else topic_specs(kafka, 3, days)
    return next(cfg for name, _, cfg in specs if name == kafka.events_topic)


def test_events_topic_retention_is_finite_by_default() -> None:
    assert TopicsSettings(kafka=KafkaSettings(bootstrap="b:1")).events_retention_days == 30
    cfg = events_config()
    assert cfg["retention.ms"] == str(30 * DAY_MS) and cfg["segment.ms"] == str(DAY_MS)
    assert cfg["retention.bytes"] == "-1" and cfg["cleanup.policy"] == "delete"


def test_events_retention_days_sets_it_and_zero_keeps_events_forever() -> None:
    assert events_config(7)["retention.ms"] == str(7 * DAY_MS)
    forever = events_config(0)
    assert forever["retention.ms"] == "-1" and "segment.ms" not in forever
