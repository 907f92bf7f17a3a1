"""The settings of ``sessionq node`` (a partitioned node: the indexer's and the worker's
settings over the partitions it owns, plus what only a node has). See
``indexer.settings`` for how values are found."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from pydantic import Field

from indexer.settings import (
    BatchSettings,
    RetentionSettings,
    SnapshotPublishingSettings,
    StoreWriterSettings,
)
from worker.settings import AnsweringSettings


class NodeSettings(
    AnsweringSettings,
    StoreWriterSettings,
    BatchSettings,
    SnapshotPublishingSettings,
    RetentionSettings,
):
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
