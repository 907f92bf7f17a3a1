"""The indexer-side roles' settings: ``ingest``, ``indexer``, ``snapshot create`` and
``snapshot restore`` (the worker-side ones are in ``worker.settings``)."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from indexer.formats import SourceFormat
from indexer.settings.base import (
    FORMAT_DESCRIPTION,
    DataDirSettings,
    RetentionSettings,
    RoleSettings,
    ServiceSettings,
    StoreWriterSettings,
)
from indexer.settings.kafka import KafkaSettings


class IngestSettings(StoreWriterSettings, DataDirSettings):
    """``sessionq ingest``: index log files into one data directory."""

    command: ClassVar[str] = "ingest"

    commit_every: int = Field(default=200_000, ge=1, description="commit after this many events")
    format: SourceFormat = Field(default="auto", description=FORMAT_DESCRIPTION)
    jobs: int = Field(
        default=0,
        ge=0,
        le=64,
        description="worker processes that read and plan the logs (0: one per CPU core; 1: none)",
    )


class S3Settings(BaseModel):
    """S3-compatible snapshot storage (``s3://bucket/prefix``). Unset values fall back to
    the standard ``AWS_*`` variables (and the default credential chain); the keys are
    read from the environment only, never from argv."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    s3_endpoint: str | None = Field(
        default=None,
        min_length=1,
        description="S3-compatible endpoint URL (http:// is allowed, for local servers)",
    )
    s3_region: str | None = Field(default=None, min_length=1, description="S3 region")
    s3_access_key_id: str | None = Field(
        default=None, min_length=1, description="S3 access key id (environment only)"
    )
    s3_secret_access_key: SecretStr | None = Field(
        default=None, description="S3 secret access key (environment only; never logged)"
    )
    s3_session_token: SecretStr | None = Field(
        default=None, description="S3 session token (environment only; never logged)"
    )


class SnapshotStorageSettings(RoleSettings):
    """A role that writes or reads snapshots, which may be in S3-compatible storage."""

    s3: S3Settings = Field(
        default_factory=S3Settings, description="S3-compatible snapshot storage (SESSIONQ_S3_*)"
    )


_DURATION_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(value: object) -> object:
    """Seconds from ``90``, ``90s``, ``15m``, ``1h`` or ``2d``; anything else is left for
    the model to reject."""
    if isinstance(value, str):
        text = value.strip().lower()
        factor = _DURATION_UNITS.get(text[-1:]) if text else None
        number = text[:-1] if factor is not None else text
        try:
            return float(number) * (factor or 1.0)
        except ValueError:
            return value
    return value


class SnapshotPublishingSettings(SnapshotStorageSettings):
    """A role that publishes snapshots on a schedule (``--snapshot-every``, declared by
    each role with its own default): how many it keeps."""

    snapshot_keep: int = Field(
        default=3, ge=1, description="complete snapshots kept at the destination (newest first)"
    )

    @field_validator("snapshot_every", mode="before", check_fields=False)
    @classmethod
    def _duration(cls, value: object) -> object:
        return parse_duration(value)


class BatchSettings(RoleSettings):
    """A role that applies records from Kafka in batches, each one commit."""

    batch_records: int = Field(default=5000, ge=1, description="commit after this many records")
    batch_ms: int = Field(default=250, ge=1, description="commit after this many milliseconds")


class IndexerSettings(
    ServiceSettings,
    StoreWriterSettings,
    DataDirSettings,
    BatchSettings,
    SnapshotPublishingSettings,
    RetentionSettings,
):
    """The indexer role: consume the events topic into one data directory."""

    command: ClassVar[str] = "indexer"

    kafka: KafkaSettings
    metrics_listen: str = Field(
        default="0.0.0.0:9464",
        description="HOST:PORT for /metrics, /healthz, /readyz; empty disables",
    )
    snapshot_every: float | None = Field(
        default=None,
        gt=0,
        description="publish a snapshot this often (seconds, or 90s / 15m / 1h / 2d)",
    )
    # After snapshot_every, so its check sees it (validated even when unset).
    snapshot_to: str | None = Field(
        default=None,
        min_length=1,
        validate_default=True,
        description="where snapshots go: a directory or s3://bucket/prefix",
    )

    @field_validator("snapshot_to")
    @classmethod
    def _snapshots_need_both(cls, to: str | None, info: ValidationInfo) -> str | None:
        """Periodic snapshots need an interval and a destination, or neither."""
        if "snapshot_every" not in info.data:
            return to  # the interval itself is invalid; its error says why
        if (info.data["snapshot_every"] is None) != (to is None):
            raise PydanticCustomError(
                "snapshot_settings",
                "periodic snapshots need both --snapshot-every (SESSIONQ_SNAPSHOT_EVERY)"
                " and --snapshot-to (SESSIONQ_SNAPSHOT_TO)",
            )
        return to


class SnapshotCreateSettings(SnapshotStorageSettings, DataDirSettings):
    """``sessionq snapshot create``: one consistent copy of a data directory."""

    command: ClassVar[str] = "snapshot create"

    snapshot_to: str = Field(
        min_length=1, description="where snapshots go: a directory or s3://bucket/prefix"
    )
    snapshot_keep: int | None = Field(
        default=None, ge=1, description="complete snapshots kept at the destination (all if unset)"
    )


class SnapshotRestoreSettings(SnapshotStorageSettings, DataDirSettings):
    """``sessionq snapshot restore``: a snapshot into a data directory."""

    command: ClassVar[str] = "snapshot restore"

    snapshot_from: str = Field(
        min_length=1,
        description="a snapshot, or a directory / s3:// prefix holding snapshots (newest is taken)",
    )
