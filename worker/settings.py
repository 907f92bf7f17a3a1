"""The worker-side roles' settings (see ``indexer.settings`` for how values are found)."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Literal

from pydantic import Field, model_validator

from indexer.settings import (
    FORMAT_DESCRIPTION,
    DataDirSettings,
    KafkaSettings,
    RedactingSettings,
    RetentionSettings,
    RoleSettings,
    ServiceSettings,
    SourceFormat,
)
from worker.calls.limits import ToolLimits

REPLY_TOPIC_PATTERNS = ("sessionq.replies", "sessionq.replies.*")  # the worker's default


class ToolLimitsSettings(RoleSettings):
    """A role that answers (or shapes) tool calls: the tools' limits."""

    tools: ToolLimits = Field(default_factory=ToolLimits)


class AnsweringSettings(ServiceSettings, ToolLimitsSettings):
    """What every role that answers tool calls from the requests topic takes (``worker``,
    ``node``): admission bounds, reply topics, the keyring."""

    kafka: KafkaSettings
    group: str = Field(default="sessionq-workers", min_length=1, description="consumer group id")
    max_in_flight: int = Field(
        default=64, ge=1, description="calls running at once per process (waiting ones hold none)"
    )
    max_in_flight_per_workspace: int | None = Field(
        default=None,
        ge=1,
        description="of those, at most this many for one workspace (default: a quarter)",
    )
    max_admitted: int = Field(
        default=1024,
        ge=1,
        description="requests held at once per process, running or waiting for their caller",
    )
    max_admitted_per_host: int | None = Field(
        default=None,
        ge=1,
        description="of those, at most this many for one host key, beyond which a request is"
        " answered busy (default: a quarter)",
    )
    max_admitted_per_workspace: int | None = Field(
        default=None,
        ge=1,
        description="of those, at most this many for one workspace, beyond which a request is"
        " answered busy (default: an eighth)",
    )
    reply_topics: list[str] = Field(
        default_factory=lambda: list(REPLY_TOPIC_PATTERNS),
        description=(
            "fnmatch patterns a request's reply_to must match unless it is the replies "
            "topic (else the request is dead-lettered); "
            "the env value separates them with os.pathsep (':'), which no topic name contains"
        ),
    )
    keyring: Path | None = Field(
        default=None, description="host public keys that may vouch for callers (JSON file)"
    )
    insecure_unauthenticated_callers: bool = Field(
        default=False,
        description="answer requests without a caller token (only on a trusted network)",
    )

    @model_validator(mode="after")
    def _callers_are_authenticated(self) -> AnsweringSettings:
        if self.keyring is None and not self.insecure_unauthenticated_callers:
            raise ValueError(
                f"a {self.command} authenticates its callers: give --keyring FILE"
                " (SESSIONQ_KEYRING), or --insecure-unauthenticated-callers on a trusted network"
            )
        return self

    @property
    def in_flight_per_workspace(self) -> int:
        """The running calls one workspace may hold: as set, else a quarter of
        ``max_in_flight`` (one setting sizes every admission bound by default)."""
        return self.max_in_flight_per_workspace or max(1, self.max_in_flight // 4)

    @property
    def admitted_per_host(self) -> int:
        """The admitted calls one host key may hold: as set, else a quarter of
        ``max_admitted``."""
        return self.max_admitted_per_host or max(1, self.max_admitted // 4)

    @property
    def admitted_per_workspace(self) -> int:
        """The admitted calls one workspace may hold: as set, else an eighth of
        ``max_admitted``."""
        return self.max_admitted_per_workspace or max(1, self.max_admitted // 8)


class WorkerSettings(AnsweringSettings, DataDirSettings):
    """The worker role: answer tool calls from the requests topic over one data dir."""

    command: ClassVar[str] = "worker"

    wait_for_index: bool = Field(
        default=False, description="join the group only after this data dir's indexer caught up"
    )
    metrics_listen: str = Field(
        default="0.0.0.0:9465",
        description="HOST:PORT for /metrics, /healthz, /readyz; empty disables",
    )


WatchMode = Literal["auto", "poll"]
WATCH_DESCRIPTION = (
    "how logs are watched: auto (file notifications; polling only where they are not"
    " available) or poll"
)


class ServeSettings(
    ServiceSettings, RedactingSettings, RetentionSettings, DataDirSettings, ToolLimitsSettings
):
    """Embedded mode: ingest and watch log files, answer over HTTP, no broker."""

    command: ClassVar[str] = "serve"

    sessions: list[Path] = Field(min_length=1, description="dsh session roots or log files")
    format: SourceFormat = Field(default="auto", description=FORMAT_DESCRIPTION)
    listen: str = Field(default="127.0.0.1:8765", description="HTTP HOST:PORT")
    watch: WatchMode = Field(default="auto", description=WATCH_DESCRIPTION)
    token_file: Path | None = Field(
        default=None,
        description="file holding the bearer token the HTTP API requires (needed beyond loopback)",
    )
    allowed_hosts: list[str] = Field(
        default_factory=list,
        description=(
            "extra Host/Origin names the HTTP API answers without a token (besides localhost"
            " and the listen address; DNS-rebinding rule)"
        ),
    )


class CallSettings(ToolLimitsSettings):
    """``sessionq call``: one tool call, in-process over ``data`` or over Kafka."""

    command: ClassVar[str] = "call"

    data: Path | None = Field(default=None, description="data directory")
    kafka: KafkaSettings | None = None
    signing_key: Path | None = Field(
        default=None, description="the host's Ed25519 private key (PEM) that signs callers"
    )
    key_id: str | None = Field(
        default=None, min_length=1, description="the signing key's id in the workers' keyring"
    )


class TopicsSettings(RoleSettings):
    """``sessionq topics create``."""

    command: ClassVar[str] = "topics create"

    kafka: KafkaSettings
    partitions: int = Field(default=3, ge=1, description="partitions of the keyed topics")
    replication_factor: int = Field(default=1, ge=1, description="replicas of every topic")
    min_insync_replicas: int | None = Field(
        default=None, ge=1, description="topic min.insync.replicas (broker default if unset)"
    )
    events_retention_days: int = Field(
        default=30,
        ge=0,
        description="retention of the events topic (keep snapshots well within it); 0 keeps"
        " events forever",
    )


class PublishSettings(ServiceSettings):
    """``sessionq publish``: session logs to the events topic."""

    command: ClassVar[str] = "publish"

    kafka: KafkaSettings
    format: SourceFormat = Field(default="auto", description=FORMAT_DESCRIPTION)


class DeleteSettings(RoleSettings):
    """``sessionq delete``: over Kafka (delete records) or through a ``serve``'s admin API."""

    command: ClassVar[str] = "delete"

    kafka: KafkaSettings | None = None
    data: Path | None = Field(
        default=None, description="a replica's data directory (read only: the sessions' keys)"
    )
    url: str | None = Field(
        default=None, min_length=1, description="base URL of a running sessionq serve"
    )
    token_file: Path | None = Field(
        default=None, description="file holding the serve's bearer token"
    )


class StatsSettings(DataDirSettings):
    """``sessionq stats``."""

    command: ClassVar[str] = "stats"


class ManifestSettings(ToolLimitsSettings):
    """``sessionq manifest``: the tool limits shape the definitions' ``timeout_ms``."""

    command: ClassVar[str] = "manifest"


class McpSettings(ServiceSettings, RedactingSettings, ToolLimitsSettings):
    """``sessionq mcp``: the five tools as an MCP server, over the embedded store (``data``,
    optionally watching ``sessions``) or a Kafka cluster (``kafka``)."""

    command: ClassVar[str] = "mcp"

    transport: Literal["stdio", "http"] = Field(
        default="stdio", description="stdio (launched by the agent) or http (Streamable HTTP)"
    )
    data: Path | None = Field(default=None, description="data directory")
    sessions: list[Path] | None = Field(
        default=None, description="dsh session roots or log files to ingest and watch"
    )
    format: SourceFormat = Field(default="auto", description=FORMAT_DESCRIPTION)
    kafka: KafkaSettings | None = None
    listen: str = Field(default="127.0.0.1:8766", description="HTTP HOST:PORT (--transport http)")
    token_file: Path | None = Field(
        default=None,
        description="file holding the bearer token the HTTP transport requires (needed beyond"
        " loopback)",
    )
    watch: WatchMode = Field(default="auto", description=WATCH_DESCRIPTION)
    allowed_hosts: list[str] = Field(
        default_factory=list,
        description=(
            "extra Host/Origin names the HTTP API answers without a token (besides localhost"
            " and the listen address; DNS-rebinding rule)"
        ),
    )
    caller: str | None = Field(
        default=None,
        min_length=1,
        description="the caller session every call speaks for (else the session that made it)",
    )
    workspace: str | None = Field(
        default=None, min_length=1, description="the caller's cwd, vouched for in its token (Kafka)"
    )
    signing_key: Path | None = Field(
        default=None, description="the host's Ed25519 private key (PEM) that signs callers"
    )
    key_id: str | None = Field(
        default=None, min_length=1, description="the signing key's id in the workers' keyring"
    )
    daemon_idle_ms: int = Field(
        default=60_000,
        ge=1,
        description="how long the daemon serving a data dir's stdio windows stays up with none"
        " connected",
    )

    @model_validator(mode="after")
    def _one_backend(self) -> McpSettings:
        if self.kafka is None and self.data is None:
            raise ValueError("give --data DIR (embedded) or --bootstrap HOST:PORT (Kafka)")
        if self.kafka is not None and self.sessions:
            raise ValueError("--sessions is for the embedded store, not with --bootstrap")
        if self.signing_key is not None and self.key_id is None:
            raise ValueError("--signing-key needs --key-id (SESSIONQ_KEY_ID)")
        if self.signing_key is not None and self.caller and not (self.workspace or self.data):
            raise ValueError(
                "--signing-key vouches for the caller's workspace: give --workspace (its cwd)"
                " or --data (a replica holding its header)"
            )
        return self
