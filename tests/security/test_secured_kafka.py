"""sessionq on a secured broker (``tests/kafka/secured.py``): SASL_SSL with SCRAM-SHA-512
users per role and ACLs. One end-to-end flow with each role's own user, and the three
ways a misconfigured role fails: each a one-line error naming the cause, quickly."""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from indexer.errors import KafkaAccessError
from indexer.query.service import StoreQueryService
from tests.fixtures.processes import sessionq
from tests.fixtures.waiting import wait_until
from tests.kafka.broker import BrokerStartError
from tests.kafka.harness import (
    ingest_reference,
    publish,
    reference_reply,
    running_indexer,
    running_worker,
    stored_offsets,
    wait_assigned,
)
from tests.kafka.secured import (
    DLQ,
    EVENTS,
    REQUESTS,
    WORKERS_GROUP,
    SecuredBroker,
    start_secured_broker,
)
from tests.kafka.test_e2e import CALLS
from worker.authn.keyring import keyring_entry
from worker.authn.tokens import CallerSigner, generate_key_pair
from worker.calls.pipeline import Pipeline
from worker.host.client import SessionqClient
from worker.transports.kafka.group import GroupSource

pytestmark = pytest.mark.kafka

REPO_ROOT = Path(__file__).resolve().parents[2]
ACP = "11111111-1111-4111-8111-111111111111"  # a session of /home/dev/acp-agent
FAIL_WITHIN_S = 30.0  # a misconfigured role must say why well before this


@pytest.fixture(scope="session")
def secured_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecuredBroker]:
    """The secured broker, with sessionq's topics created by ``admin`` through the CLI."""
    try:
        broker = start_secured_broker(tmp_path_factory.mktemp("kafka-secured"))
    except BrokerStartError as exc:
        pytest.fail(f"could not start the secured Kafka broker:\n{exc}", pytrace=False)
    try:
        created = sessionq(
            "topics", "create", *broker.cli_args("admin"), "--partitions", "1", env=topic_env()
        )
        assert created.returncode == 0, created.stderr
        broker.topics_stderr = created.stderr  # type: ignore[attr-defined]
        yield broker
    finally:
        broker.stop()


def topic_env(**overrides: str) -> dict[str, str]:
    env = {
        "SESSIONQ_EVENTS_TOPIC": EVENTS,
        "SESSIONQ_REQUESTS_TOPIC": "sq.requests",
        "SESSIONQ_REPLIES_TOPIC": "sq.replies",
        "SESSIONQ_DLQ_TOPIC": DLQ,
    }
    env.update(overrides)
    return env


def fails_with(result: subprocess.CompletedProcess[str], command: str, *words: str) -> str:
    """Exit 1, no traceback, the last stderr line is ``sessionq COMMAND: ...`` naming the
    cause (every word in it)."""
    assert result.returncode == 1, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert lines, result.stderr
    last = lines[-1]
    assert last.startswith(f"sessionq {command}: "), result.stderr
    for word in words:
        assert word in last, (word, last)
    return last


def test_topics_create_warns_about_one_replica(secured_broker: SecuredBroker) -> None:
    stderr: str = secured_broker.topics_stderr  # type: ignore[attr-defined]
    assert "warning" in stderr and "--replication-factor is 1" in stderr


async def test_end_to_end_with_a_user_per_role(
    secured_broker: SecuredBroker, corpus_dir: Path, tmp_path: Path
) -> None:
    """The production path: the host publishes, the indexer indexes, a worker with a
    keyring answers the host's signed calls — each role its own SASL_SSL user under its
    ACLs — and every reply equals the in-process one byte for byte."""
    broker = secured_broker
    publisher = await publish(broker.kafka("host"), EVENTS, [corpus_dir])
    assert publisher.summary.records > 0
    data = tmp_path / "data"
    private, public = generate_key_pair()
    (tmp_path / "host.key").write_text(private)
    signer = CallerSigner.from_file("host", tmp_path / "host.key")
    keyring = tmp_path / "keyring.json"
    keyring.write_text(json.dumps({"keys": [keyring_entry("host", public, ["/home/dev"])]}))
    reference = tmp_path / "reference"
    ingest_reference(reference, [corpus_dir])
    service = StoreQueryService(reference)
    tools = Pipeline(service)
    try:
        async with running_indexer(data, broker.kafka("indexer"), batch_ms=20) as indexer:
            await wait_until(
                lambda: (
                    indexer.died()
                    or sum(o for (t, _), o in stored_offsets(data).items() if t == EVENTS)
                    >= publisher.summary.records
                ),
                timeout=60,
                what="the indexer to store every published record",
            )
            assert not indexer.died()
            async with (
                running_worker(
                    data, broker.kafka("worker"), WORKERS_GROUP, keyring=keyring
                ) as worker,
                SessionqClient(broker.kafka("host"), signer=signer) as client,
            ):
                await wait_assigned(worker, 1)
                signed = [c for c in CALLS if service.get_session(c.caller).header.cwd]
                assert len(signed) >= 10
                for n, call in enumerate(signed):
                    rid = f"secured-{n}"
                    reply = await client.call(
                        call.tool,
                        call.arguments,
                        session_id=call.caller,
                        step_seq=call.step_seq,
                        workspace=service.get_session(call.caller).header.cwd,
                        timeout_ms=20000,
                        request_id=rid,
                    )
                    expected = await reference_reply(tools, call, rid)
                    assert reply.encode() == expected.encode(), call
    finally:
        service.close()


def test_wrong_password_is_named(secured_broker: SecuredBroker, tmp_path: Path) -> None:
    wrong = tmp_path / "wrong.password"
    wrong.write_text("not-the-password\n")
    args = [*secured_broker.cli_args("host")]
    args[args.index("--sasl-password-file") + 1] = str(wrong)
    started = time.monotonic()
    result = sessionq(
        "call", "session_search", '{"query": "x"}', "--caller", ACP, *args, env=topic_env()
    )
    assert time.monotonic() - started < FAIL_WITHIN_S
    fails_with(result, "call", "SASL authentication failed", "'host'")


def test_untrusted_ca_is_named(secured_broker: SecuredBroker) -> None:
    args = [*secured_broker.cli_args("host")]
    args[args.index("--ssl-cafile") + 1] = str(secured_broker.rogue_ca_file)
    started = time.monotonic()
    result = sessionq(
        "call", "session_search", '{"query": "x"}', "--caller", ACP, *args, env=topic_env()
    )
    assert time.monotonic() - started < FAIL_WITHIN_S
    fails_with(result, "call", "TLS", "not trusted")


def test_missing_acl_is_named(secured_broker: SecuredBroker, corpus_dir: Path) -> None:
    """The host user may not write the dead-letter topic: publishing there is refused."""
    started = time.monotonic()
    result = sessionq(
        "publish",
        *secured_broker.cli_args("host"),
        str(corpus_dir),
        env=topic_env(SESSIONQ_EVENTS_TOPIC=DLQ),
    )
    assert time.monotonic() - started < FAIL_WITHIN_S
    fails_with(result, "publish", "not authorized", DLQ, "ACL")


async def test_missing_group_acl_is_named(secured_broker: SecuredBroker) -> None:
    """A worker joining a consumer group it has no ACL for fails, naming the group."""
    source = GroupSource(
        secured_broker.kafka("worker"), REQUESTS, "sq.not-granted", client_id="test-no-acl"
    )

    async def nothing(_: list[int]) -> None:
        return None

    await source.start(nothing, nothing)
    try:
        with pytest.raises(KafkaAccessError, match=r"consumer group sq\.not-granted"):
            async with asyncio.timeout(FAIL_WITHIN_S):
                while True:
                    await source.poll(timeout_ms=200, max_records=10)
    finally:
        await source.stop()


def test_password_never_shown(secured_broker: SecuredBroker) -> None:
    kafka = secured_broker.kafka("host")
    password = secured_broker.passwords["host"]
    assert password not in repr(kafka) and password not in str(kafka.model_dump())
    assert kafka.password() is not None
    assert kafka.password().get_secret_value() == password  # type: ignore[union-attr]
