"""Configuration: one pydantic-settings model per role, defaults in one place.

Every value comes from, in order: the command-line flags that were given (the CLI
passes only those), then ``SESSIONQ_<NAME>`` environment variables, then the defaults
below. Nested models (the Kafka connection, the tool limits) keep their fields' flat
names in the environment: ``SESSIONQ_BOOTSTRAP``, not ``SESSIONQ_KAFKA__BOOTSTRAP``,
so the variables read the same as the flags. The README's configuration table is
checked against these models by a test.
"""

from __future__ import annotations

import os
import types
import typing
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationInfo, field_validator
from pydantic.fields import FieldInfo
from pydantic_core import PydanticCustomError
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from indexer.failpoints import FailPoints
from indexer.redact import Redaction, RedactMode

ENV_PREFIX = "SESSIONQ_"
EVENTS_TOPIC = "sessionq.events"
REQUESTS_TOPIC = "sessionq.requests"
DLQ_TOPIC = "sessionq.dlq"
LINEAGE_TOPIC = "sessionq.lineage"
REPLIES_TOPIC = "sessionq.replies"

# How session log files are read: recognised per root and file, or one format forced
# (indexer.logs.importers.detect; "auto" is None there).
SourceFormat = Literal["auto", "dsh", "claude-code", "codex", "gemini", "opencode", "copilot"]
FORMAT_DESCRIPTION = (
    "log format of the paths: auto (recognised), dsh, claude-code, codex, gemini, opencode,"
    " copilot"
)


def env_name(field: str) -> str:
    return ENV_PREFIX + field.upper()


def nested_model(annotation: Any) -> type[BaseModel] | None:
    """``M`` for a field annotated ``M`` or ``M | None`` with ``M`` a pydantic model."""
    candidates = (
        typing.get_args(annotation)
        if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union
        else (annotation,)
    )
    for candidate in candidates:
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def _is_list(annotation: Any) -> bool:
    return typing.get_origin(annotation) is list


def flat_fields(cls: type[BaseModel]) -> dict[str, tuple[tuple[str, ...], Any]]:
    """Every setting a model reads by its flat name: its path in the model and its type
    (``bootstrap`` -> ``(("kafka", "bootstrap"), str)``). One name, one setting."""
    out: dict[str, tuple[tuple[str, ...], Any]] = {}
    for name, field in cls.model_fields.items():
        nested = nested_model(field.annotation)
        if nested is None:
            out[name] = ((name,), field.annotation)
        else:
            out.update({n: ((name, n), f.annotation) for n, f in nested.model_fields.items()})
    return out


def nest(values: dict[str, Any], cls: type[BaseModel]) -> dict[str, Any]:
    """Flat ``{name: value}`` as the model's (nested) input; unknown names are ignored."""
    fields = flat_fields(cls)
    out: dict[str, Any] = {}
    for name, value in values.items():
        if name not in fields:
            continue
        path = fields[name][0]
        target = out
        for part in path[:-1]:
            target = target.setdefault(part, {})
        target[path[-1]] = value
    return out


class FlatEnvSource(PydanticBaseSettingsSource):
    """``SESSIONQ_<FIELD>`` for every field, a nested model's fields included (flat)."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False  # unused: __call__ reads everything at once

    @staticmethod
    def _value(name: str, annotation: Any) -> Any:
        """The variable's text: a list splits on ``os.pathsep``; an int is parsed here
        (models with JS-style int checks take no strings), else left for the model to
        reject with its message."""
        raw = os.environ.get(env_name(name))
        if raw is None:
            return None
        if _is_list(annotation):
            return [part for part in raw.split(os.pathsep) if part]
        if annotation is int:
            try:
                return int(raw)
            except ValueError:
                return raw
        return raw

    def __call__(self) -> dict[str, Any]:
        found = {
            name: value
            for name, (_, annotation) in flat_fields(self.settings_cls).items()
            if (value := self._value(name, annotation)) is not None
        }
        return nest(found, self.settings_cls)


class RoleSettings(BaseSettings):
    """Base of every role's settings: flags given, then ``SESSIONQ_*``, then defaults."""

    model_config = SettingsConfigDict(frozen=True, extra="forbid")
    command: ClassVar[str] = ""  # the ``sessionq`` command these settings configure

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, FlatEnvSource(settings_cls))


class ServiceSettings(RoleSettings):
    """A long-running role: it logs (text or JSON lines, on stderr)."""

    log_format: Literal["text", "json"] = Field(
        default="text", description="log lines as text or JSON"
    )
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(
        default="INFO", description="log level"
    )


class RedactingSettings(RoleSettings):
    """A role that may write a data dir decides what it redacts (docs/security.md)."""

    redact_secrets: RedactMode = Field(
        default="on",
        description="secrets in session logs: on (never indexed or shown), store (also never"
        " stored), off (upstream-exact output)",
    )

    @property
    def redaction(self) -> Redaction:
        return Redaction(self.redact_secrets)


class StoreWriterSettings(RedactingSettings):
    """A role that may write a data dir; ``failpoint`` is the crash tests' aid
    (``indexer.failpoints``), never set in production."""

    failpoint: str | None = Field(
        default=None, description="test aid: kill the process at <point>:<n> (crash tests)"
    )

    @field_validator("failpoint")
    @classmethod
    def _known_failpoint(cls, value: str | None) -> str | None:
        FailPoints.parse(value)  # raises ValueError naming the problem
        return value

    @property
    def failpoints(self) -> FailPoints:
        return FailPoints.parse(self.failpoint)


def _read_password(file: Path | None, given: SecretStr | None) -> SecretStr | None:
    """The first line of ``file`` (when given, it wins), else ``given``; None when empty
    or unreadable (the file's readability is checked on its own)."""
    if file is None:
        return given if given is not None and given.get_secret_value() else None
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    lines = text.splitlines()
    return SecretStr(lines[0]) if lines and lines[0] else None


SecurityProtocol = Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]
SaslMechanism = Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]


class KafkaSettings(BaseModel):
    """Where the broker is and which topics sessionq uses."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    bootstrap: str = Field(min_length=1, description="Kafka bootstrap address host:port")
    events_topic: str = Field(default=EVENTS_TOPIC, min_length=1, description="events topic")
    requests_topic: str = Field(
        default=REQUESTS_TOPIC, min_length=1, description="tool requests topic"
    )
    replies_topic: str = Field(
        default=REPLIES_TOPIC, min_length=1, description="default reply topic"
    )
    dlq_topic: str = Field(default=DLQ_TOPIC, min_length=1, description="dead-letter topic")
    lineage_topic: str = Field(
        default=LINEAGE_TOPIC, min_length=1, description="partitioned nodes' lineage topic"
    )
    sasl_mechanism: SaslMechanism | None = Field(
        default=None, description="PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (SASL_* protocols)"
    )
    sasl_username: str | None = Field(default=None, min_length=1, description="SASL user name")
    sasl_password_file: Path | None = Field(
        default=None, description="file holding the SASL password (never given on argv)"
    )
    sasl_password: SecretStr | None = Field(
        default=None, description="the SASL password (environment only; never logged)"
    )
    ssl_cafile: Path | None = Field(default=None, description="PEM CA bundle to trust")
    ssl_certfile: Path | None = Field(default=None, description="PEM client certificate (mTLS)")
    ssl_keyfile: Path | None = Field(default=None, description="PEM client key (mTLS)")
    ssl_check_hostname: bool = Field(
        default=True, description="check the broker certificate's host name"
    )
    # Last, so its check sees every TLS and SASL setting (and is reported under its name).
    security_protocol: SecurityProtocol = Field(
        default="PLAINTEXT",
        validate_default=True,
        description="PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL",
    )

    @field_validator("bootstrap")
    @classmethod
    def _addresses(cls, bootstrap: str) -> str:
        """``host:port[,host:port...]`` with numeric ports, checked here so a pasted
        placeholder is one line at start, not a client's traceback."""
        for address in bootstrap.split(","):
            host, _, port = address.strip().rpartition(":")
            if not host.strip("[]") or not port.isdigit() or not 0 < int(port) < 65536:
                raise PydanticCustomError(
                    "kafka_bootstrap", "expected host:port[,host:port...] with numeric ports"
                )
        return bootstrap

    @field_validator("sasl_password_file", "ssl_cafile", "ssl_certfile", "ssl_keyfile")
    @classmethod
    def _readable(cls, path: Path | None) -> Path | None:
        if path is not None and not os.access(path, os.R_OK):
            raise ValueError(f"cannot read {path}")
        return path

    @field_validator("security_protocol")
    @classmethod
    def _combination(cls, protocol: str, info: ValidationInfo) -> str:
        """SASL needs a mechanism, a user and a password; TLS files need TLS."""
        data = info.data

        def flags(names: tuple[str, ...]) -> list[str]:
            return ["--" + n.replace("_", "-") for n in names if data.get(n) is not None]

        if protocol.startswith("SASL_"):
            missing = [
                f"--{n.replace('_', '-')}"
                for n in ("sasl_mechanism", "sasl_username")
                if data.get(n) is None
            ]
            file = data.get("sasl_password_file")
            if _read_password(file, data.get("sasl_password")) is None:
                missing.append(
                    f"a password in {file}"
                    if file
                    else "--sasl-password-file or SESSIONQ_SASL_PASSWORD"
                )
            if missing:
                raise PydanticCustomError(
                    "kafka_security",
                    "{protocol} needs {missing}",
                    {"protocol": protocol, "missing": ", ".join(missing)},
                )
        else:
            given = flags(("sasl_mechanism", "sasl_username", "sasl_password_file"))
            if given:
                raise PydanticCustomError(
                    "kafka_security",
                    "{given} given but {protocol} uses no SASL",
                    {"given": ", ".join(given), "protocol": protocol},
                )
        if not protocol.endswith("SSL"):
            given = flags(("ssl_cafile", "ssl_certfile", "ssl_keyfile"))
            if given:
                raise PydanticCustomError(
                    "kafka_security",
                    "{given} given but {protocol} uses no TLS",
                    {"given": ", ".join(given), "protocol": protocol},
                )
        elif data.get("ssl_keyfile") is not None and data.get("ssl_certfile") is None:
            raise PydanticCustomError(
                "kafka_security", "--ssl-keyfile needs --ssl-certfile (the client certificate)"
            )
        return protocol

    def password(self) -> SecretStr | None:
        """The SASL password: the file's first line, else ``SESSIONQ_SASL_PASSWORD``."""
        return _read_password(self.sasl_password_file, self.sasl_password)

    @property
    def secured(self) -> bool:
        """A production profile: anything but PLAINTEXT."""
        return self.security_protocol != "PLAINTEXT"


class IngestSettings(StoreWriterSettings):
    """``sessionq ingest``: index log files into one data directory."""

    command: ClassVar[str] = "ingest"

    data: Path = Field(description="data directory")
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


class IndexerSettings(ServiceSettings, StoreWriterSettings):
    """The indexer role: consume the events topic into one data directory."""

    command: ClassVar[str] = "indexer"

    data: Path = Field(description="data directory")
    kafka: KafkaSettings
    batch_records: int = Field(default=5000, ge=1, description="commit after this many records")
    batch_ms: int = Field(default=250, ge=1, description="commit after this many milliseconds")
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
        " topic); unset keeps them",
    )
    retention_check_ms: int = Field(
        default=60_000, ge=1, description="how often --retain-days looks for expired sessions"
    )

    @field_validator("snapshot_every", mode="before")
    @classmethod
    def _duration(cls, value: object) -> object:
        return parse_duration(value)

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


class SnapshotCreateSettings(RoleSettings):
    """``sessionq snapshot create``: one consistent copy of a data directory."""

    command: ClassVar[str] = "snapshot create"

    data: Path = Field(description="data directory")
    snapshot_to: str = Field(
        min_length=1, description="where snapshots go: a directory or s3://bucket/prefix"
    )
    snapshot_keep: int | None = Field(
        default=None, ge=1, description="complete snapshots kept at the destination (all if unset)"
    )
    s3: S3Settings = Field(
        default_factory=S3Settings, description="S3-compatible snapshot storage (SESSIONQ_S3_*)"
    )


class SnapshotRestoreSettings(RoleSettings):
    """``sessionq snapshot restore``: a snapshot into a data directory."""

    command: ClassVar[str] = "snapshot restore"

    data: Path = Field(description="data directory")
    snapshot_from: str = Field(
        min_length=1,
        description="a snapshot, or a directory / s3:// prefix holding snapshots (newest is taken)",
    )
    s3: S3Settings = Field(
        default_factory=S3Settings, description="S3-compatible snapshot storage (SESSIONQ_S3_*)"
    )
