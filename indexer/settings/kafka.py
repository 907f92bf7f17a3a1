"""How to reach the broker and which topics sessionq uses (``KafkaSettings``, nested in
every role that talks to Kafka); secrets only from files or the environment."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from indexer.settings.base import (
    DLQ_TOPIC,
    EVENTS_TOPIC,
    LINEAGE_TOPIC,
    REPLIES_TOPIC,
    REQUESTS_TOPIC,
)


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
