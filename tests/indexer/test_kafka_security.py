"""The Kafka connection settings (TLS, SASL) and their one translation to aiokafka; the
failure mapping. No broker: ``tests/kafka/test_secured.py`` runs them against one."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest
from aiokafka.errors import (
    KafkaConnectionError,
    SaslAuthenticationFailed,
    TopicAuthorizationFailedError,
)
from pydantic import ValidationError

from indexer.errors import KafkaAccessError, SessionqError
from indexer.kafka.client import access_error, connection_options, kafka_access
from indexer.settings import KafkaSettings
from worker.cli.main import build_parser, main
from worker.settings import TopicsSettings

SECRET = "correct-horse-battery-staple"


@pytest.fixture
def password_file(tmp_path: Path) -> Path:
    path = tmp_path / "password"
    path.write_text(SECRET + "\n")
    return path


@pytest.fixture
def ca_file() -> Path:
    import certifi

    return Path(certifi.where())


def sasl_ssl(password_file: Path, **more: object) -> KafkaSettings:
    return KafkaSettings.model_validate(
        {
            "bootstrap": "kafka:9093",
            "security_protocol": "SASL_SSL",
            "sasl_mechanism": "SCRAM-SHA-512",
            "sasl_username": "host",
            "sasl_password_file": password_file,
            **more,
        }
    )


def test_plaintext_is_the_default() -> None:
    kafka = KafkaSettings(bootstrap="kafka:9092")
    assert kafka.security_protocol == "PLAINTEXT" and not kafka.secured
    assert connection_options(kafka) == {
        "bootstrap_servers": "kafka:9092",
        "security_protocol": "PLAINTEXT",
    }


def test_sasl_ssl_options(password_file: Path) -> None:
    options = connection_options(sasl_ssl(password_file))
    assert options["security_protocol"] == "SASL_SSL"
    assert options["sasl_mechanism"] == "SCRAM-SHA-512"
    assert options["sasl_plain_username"] == "host"
    assert options["sasl_plain_password"] == SECRET
    context = options["ssl_context"]
    assert isinstance(context, ssl.SSLContext)
    assert context.check_hostname and context.verify_mode == ssl.CERT_REQUIRED
    unchecked = connection_options(sasl_ssl(password_file, ssl_check_hostname=False))
    assert not unchecked["ssl_context"].check_hostname


def test_ssl_cafile_is_loaded(ca_file: Path) -> None:
    kafka = KafkaSettings(bootstrap="kafka:9093", security_protocol="SSL", ssl_cafile=ca_file)
    context = connection_options(kafka)["ssl_context"]
    assert context.cert_store_stats()["x509_ca"] > 0
    assert "sasl_mechanism" not in connection_options(kafka)


def test_the_password_is_never_shown(password_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kafka = sasl_ssl(password_file)
    assert SECRET not in repr(kafka) and SECRET not in str(kafka.model_dump())
    monkeypatch.setenv("SESSIONQ_BOOTSTRAP", "kafka:9093")
    monkeypatch.setenv("SESSIONQ_SECURITY_PROTOCOL", "SASL_PLAINTEXT")
    monkeypatch.setenv("SESSIONQ_SASL_MECHANISM", "PLAIN")
    monkeypatch.setenv("SESSIONQ_SASL_USERNAME", "host")
    monkeypatch.setenv("SESSIONQ_SASL_PASSWORD", SECRET)
    settings = TopicsSettings()  # type: ignore[call-arg]  # from the environment
    assert settings.kafka.password() is not None
    assert settings.kafka.password().get_secret_value() == SECRET  # type: ignore[union-attr]
    assert SECRET not in repr(settings) and SECRET not in str(settings)


def test_no_password_flag_on_argv() -> None:
    """Every Kafka command takes the password file's path, never the password."""
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    assert isinstance(commands, dict)
    topics = next(a for a in commands["topics"]._actions if a.dest == "topics_command")
    parsers = [commands[n] for n in ("indexer", "worker", "publish", "call")]
    parsers.append(topics.choices["create"])
    for sub in parsers:
        dests = {a.dest for a in sub._actions}
        assert "sasl_password_file" in dests and "sasl_password" not in dests


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"security_protocol": "SASL_SSL"}, "SASL_SSL needs --sasl-mechanism, --sasl-username"),
        ({"sasl_username": "host"}, "--sasl-username given but PLAINTEXT uses no SASL"),
        ({"security_protocol": "SASL_SSL", "ssl_keyfile": "KEY"}, "--ssl-keyfile needs"),
    ],
)
def test_combinations_are_checked(
    values: dict[str, str], message: str, password_file: Path
) -> None:
    if values.get("ssl_keyfile") == "KEY":
        values = {
            **values,
            "ssl_keyfile": str(password_file),
            "sasl_mechanism": "PLAIN",
            "sasl_username": "u",
            "sasl_password_file": str(password_file),
        }
    with pytest.raises(ValidationError, match=message):
        KafkaSettings.model_validate({"bootstrap": "kafka:9092", **values})


def test_an_empty_password_file_is_no_password(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.write_text("")
    with pytest.raises(ValidationError, match=f"needs a password in {empty}"):
        sasl_ssl(empty)


def test_cli_names_the_missing_settings(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SESSIONQ_SASL_PASSWORD", raising=False)
    with pytest.raises(SystemExit) as exited:
        main(["topics", "create", "--bootstrap", "k:1", "--security-protocol", "SASL_SSL"])
    assert exited.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "--security-protocol / SESSIONQ_SECURITY_PROTOCOL: SASL_SSL needs" in err


def test_topics_create_on_an_unreachable_broker_is_one_line(
    capsys: pytest.CaptureFixture[str], unused_tcp_port: int
) -> None:
    assert main(["topics", "create", "--bootstrap", f"127.0.0.1:{unused_tcp_port}"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.splitlines() == [
        f"sessionq topics: Kafka at 127.0.0.1:{unused_tcp_port} (PLAINTEXT): connection refused"
    ]


def test_authorization_failures_name_the_topic(password_file: Path) -> None:
    kafka = sasl_ssl(password_file)
    error = access_error(kafka, TopicAuthorizationFailedError({"sq.dlq"}))
    assert isinstance(error, SessionqError)
    assert error.message == (
        "Kafka at kafka:9093 (SASL_SSL as 'host'): not authorized for topic sq.dlq (missing ACL)"
    )
    sasl = access_error(kafka, SaslAuthenticationFailed("invalid credentials"))
    assert "SASL authentication failed (invalid credentials)" in sasl.message


async def test_kafka_access_diagnoses_a_failed_bootstrap(unused_tcp_port: int) -> None:
    kafka = KafkaSettings(bootstrap=f"127.0.0.1:{unused_tcp_port}")
    with pytest.raises(KafkaAccessError, match="connection refused"):
        async with kafka_access(kafka):
            raise KafkaConnectionError("Unable to bootstrap")
