"""The settings machinery every role shares: flags given, then ``SESSIONQ_<NAME>``
variables (nested models read by their fields' flat names), then the defaults; and the
bases of the role models (a long-running role logs; a role that writes a data dir takes
the crash tests' fail-point and the redaction mode)."""

from __future__ import annotations

import os
import types
import typing
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field, field_validator
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from indexer.environment import env_name
from indexer.failpoints import FailPoints
from indexer.redact import Redaction, RedactMode
from indexer.store.bounds import BATCH_BYTES

EVENTS_TOPIC = "sessionq.events"
REQUESTS_TOPIC = "sessionq.requests"
DLQ_TOPIC = "sessionq.dlq"
LINEAGE_TOPIC = "sessionq.lineage"
REPLIES_TOPIC = "sessionq.replies"

FORMAT_DESCRIPTION = (
    "log format of the paths: auto (recognised), dsh, claude-code, codex, gemini, opencode,"
    " copilot, aider"
)


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
    """A long-running role: it logs (text or JSON lines, on stderr) and runs one event
    loop (``worker.cli.runtime.run_loop``)."""

    log_format: Literal["text", "json"] = Field(
        default="text", description="log lines as text or JSON"
    )
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(
        default="INFO", description="log level"
    )
    event_loop: Literal["uvloop", "asyncio"] = Field(
        default="uvloop",
        description="the event loop: uvloop (libuv, less CPU per request; asyncio where it"
        " is not installed) or the standard library's asyncio",
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
    commit_every_bytes: int = Field(
        default=BATCH_BYTES,
        ge=1 << 20,
        description="commit once the open batch holds this many bytes of index work"
        " (Tantivy's queued deletes), whatever its count of records",
    )

    @field_validator("failpoint")
    @classmethod
    def _known_failpoint(cls, value: str | None) -> str | None:
        FailPoints.parse(value)  # raises ValueError naming the problem
        return value

    @property
    def failpoints(self) -> FailPoints:
        return FailPoints.parse(self.failpoint)


class RetentionSettings(RoleSettings):
    """A role that deletes expired sessions (``--retain-days``): on a data dir it writes,
    or as delete records on the events topic (per owned partition, for a node)."""

    retain_days: int | None = Field(
        default=None,
        ge=1,
        description="delete sessions whose newest event is older (as delete records on the"
        " events topic where there is one); unset keeps them",
    )
    retention_check_ms: int = Field(
        default=60_000, ge=1, description="how often --retain-days looks for expired sessions"
    )


class DataDirSettings(RoleSettings):
    """A role that needs a data dir (a role for which one is optional declares its own)."""

    data: Path = Field(description="data directory")
