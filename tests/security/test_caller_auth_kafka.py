"""Authenticated callers over a real broker (issue 9): a worker with a keyring answers only
requests whose host token vouches for this request, this caller and its workspace."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.builders import header
from tests.fixtures.kafka import KafkaCase
from tests.kafka.harness import (
    create_topics,
    publish_texts,
    running_indexer,
    running_worker,
    wait_assigned,
)
from tests.kafka.records import RawProducer, ReplyTap
from worker.authn.keyring import keyring_entry
from worker.authn.tokens import CallerSigner, generate_key_pair
from worker.contract.errors import CALLER_UNAUTHENTICATED, UNAUTHENTICATED_MESSAGE
from worker.host.client import SessionqClient

pytestmark = pytest.mark.kafka

A = header("auth-a", cwd="/work/a")
B = header("auth-b", cwd="/work/b")
A2 = header("auth-a2", cwd="/work/a")


def signer_for(tmp_path: Path, kid: str, workspaces: list[str]) -> tuple[CallerSigner, dict]:
    private, public = generate_key_pair()
    (tmp_path / f"{kid}.key").write_text(private)
    return CallerSigner.from_file(kid, tmp_path / f"{kid}.key"), keyring_entry(
        kid, public, workspaces
    )


async def test_only_requests_a_host_key_vouches_for_are_answered(kafka_case: KafkaCase) -> None:
    kafka_bootstrap, topic_factory, unique_name, tmp_path = kafka_case.parts()
    topics = await create_topics(kafka_bootstrap, topic_factory, events=1, requests=2)
    kafka = topics.kafka()
    data = tmp_path / "data"
    host_a, entry = signer_for(tmp_path, "host-a", ["/work/a"])
    keyring = tmp_path / "keyring.json"
    keyring.write_text(json.dumps({"keys": [entry]}))
    async with (
        running_indexer(data, kafka, batch_ms=20),
        RawProducer(kafka_bootstrap) as producer,
    ):
        sessions = ((A, "alpha needle"), (B, "bravo needle"), (A2, "second needle"))
        await publish_texts(producer, topics, data, sessions)
        async with (
            running_worker(data, kafka, unique_name("group"), keyring=keyring) as worker,
            SessionqClient(kafka, signer=host_a) as signed,
            SessionqClient(kafka) as unsigned,
            ReplyTap(kafka_bootstrap, topics.replies) as tap,
        ):
            await wait_assigned(worker, 2)
            assert worker.readiness_notes() == {}
            search = {"query": "needle"}
            ok = await signed.call(
                "session_search", search, session_id="auth-a", workspace="/work/a",
                timeout_ms=20000,
            )
            assert ok.ok, ok.text
            assert "auth-a2" in (ok.text or "") and "auth-b" not in (ok.text or "")

            refusals = [
                # no token at all
                await unsigned.call(
                    "session_search", search, session_id="auth-a", routing_key="/work/a",
                    timeout_ms=20000,
                ),
                # host-a may not speak for /work/b
                await signed.call(
                    "session_search", search, session_id="auth-b", workspace="/work/b",
                    timeout_ms=20000,
                ),
                # host-a claims /work/a for a caller whose stored cwd is /work/b
                await signed.call(
                    "session_search", search, session_id="auth-b", workspace="/work/a",
                    timeout_ms=20000,
                ),
            ]
            # a token replayed onto another request id
            original = {
                "v": 1, "kind": "request", "id": "req-original", "reply_to": topics.replies,
                "tool": "session_search", "arguments": search,
                "caller": {"session_id": "auth-a"},
            }
            stolen = host_a.sign(original, "/work/a")
            await producer.send_json(
                topics.requests,
                {**original, "id": "req-replayed",
                 "caller": {"session_id": "auth-a", "token": stolen}},
                key="/work/a",
            )
            replayed = (await tap.wait_for(["req-replayed"], timeout=30))["req-replayed"]
            for reply in [*refusals, replayed]:
                assert reply.error is not None, reply.text
                assert (reply.error.code, reply.error.message) == (
                    CALLER_UNAUTHENTICATED,
                    UNAUTHENTICATED_MESSAGE,
                )
