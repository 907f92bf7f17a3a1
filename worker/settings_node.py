"""The settings of ``sessionq node`` (a partitioned node: the indexer's and the worker's
settings over the partitions it owns, plus what only a node has). See
``indexer.settings`` for how values are found."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from pydantic import Field, field_validator

from indexer.settings import S3Settings, StoreWriterSettings, parse_duration
from worker.settings import AnsweringSettings


class NodeSettings(AnsweringSettings, StoreWriterSettings):
    """A partitioned node: one consumer-group member on the events and requests topics
    that keeps a store per owned partition under ``data`` and answers their requests."""

    command: ClassVar[str] = "node"

    data: Path = Field(description="data directory (a store per partition inside)")
    group: str = Field(default="sessionq-nodes", min_length=1, description="consumer group id")
    metrics_listen: str = Field(
        default="0.0.0.0:9466",
        description="HOST:PORT for /metrics, /healthz, /readyz; empty disables",
    )
    standby_replicas: int = Field(
        default=0,
        ge=0,
        description="warm copies of other nodes' partitions this node keeps (answering nothing)",
    )
    session_timeout_ms: int = Field(
        default=6000,
        ge=1000,
        description="a node silent this long loses its partitions (the broker's minimum: 6000)",
    )
    batch_records: int = Field(default=5000, ge=1, description="commit after this many records")
    batch_ms: int = Field(default=250, ge=1, description="commit after this many milliseconds")
    snapshot_from: str | None = Field(
        default=None,
        min_length=1,
        description="restore a gained partition without a local store from here",
    )
    snapshot_to: str | None = Field(
        default=None,
        min_length=1,
        description="where snapshots go: a directory or s3://bucket/prefix",
    )
    snapshot_every: float = Field(
        default=3600.0,
        gt=0,
        description="publish a snapshot this often (seconds, or 90s / 15m / 1h / 2d)",
    )
    snapshot_keep: int = Field(
        default=3, ge=1, description="complete snapshots kept at the destination (newest first)"
    )
    s3: S3Settings = Field(
        default_factory=S3Settings, description="S3-compatible snapshot storage (SESSIONQ_S3_*)"
    )
    retain_days: int | None = Field(
        default=None,
        ge=1,
        description="delete sessions whose newest event is older (delete records on the events"
        " topic, per owned partition); unset keeps them",
    )
    retention_check_ms: int = Field(
        default=60_000, ge=1, description="how often --retain-days looks for expired sessions"
    )

    @field_validator("snapshot_every", mode="before")
    @classmethod
    def _duration(cls, value: object) -> object:
        return parse_duration(value)
