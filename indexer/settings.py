"""Indexer configuration: one frozen settings object, ``SESSIONQ_`` environment prefix."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

EVENTS_TOPIC = "sessionq.events"
REQUESTS_TOPIC = "sessionq.requests"
DLQ_TOPIC = "sessionq.dlq"
REPLIES_TOPIC = "sessionq.replies"


class KafkaSettings(BaseSettings):
    """Where the broker is and which topics sessionq uses."""

    model_config = SettingsConfigDict(env_prefix="SESSIONQ_", frozen=True, extra="ignore")

    bootstrap: str = Field(description="Kafka bootstrap address host:port")
    events_topic: str = EVENTS_TOPIC
    requests_topic: str = REQUESTS_TOPIC
    dlq_topic: str = DLQ_TOPIC
    replies_topic: str = REPLIES_TOPIC


class IndexerSettings(BaseSettings):
    """The indexer role: consume the events topic into one data directory."""

    model_config = SettingsConfigDict(env_prefix="SESSIONQ_", frozen=True, extra="ignore")

    data: Path
    batch_records: int = Field(default=5000, ge=1, description="commit after this many records")
    batch_ms: int = Field(default=250, ge=1, description="commit after this many milliseconds")
