"""Trust on the requests topic, over a real broker: a captured caller token answers only
its own request; one host's backlog (unknown callers, replays) delays only itself; a
request naming a missing reply topic is dead-lettered at once without holding a slot."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from tests.builders import header, user
from tests.fixtures.kafka import KafkaCase
from tests.fixtures.waiting import wait_until
from tests.kafka.harness import (
    caught_up,
    committed_offsets,
    create_topics,
    end_offsets,
    has_records,
    read_topic,
    running_indexer,
    running_worker,
    wait_assigned,
)
from tests.kafka.records import RawProducer, ReplyTap, events_record, header_record, routing_key
from worker.authn.keyring import keyring_entry
from worker.authn.tokens import CallerSigner, generate_key_pair
from worker.contract.errors import CALLER_UNAUTHENTICATED
from worker.host.client import SessionqClient

pytestmark = pytest.mark.kafka

VICTIM = header("trust-victim", cwd="/work/good")
FLOOD = 1_100


def signer_for(tmp_path: Path, kid: str, workspaces: list[str]) -> tuple[CallerSigner, dict]:
    private, public = generate_key_pair()
    (tmp_path / f"{kid}.key").write_text(private)
    return CallerSigner.from_file(kid, tmp_path / f"{kid}.key"), keyring_entry(
        kid, public, workspaces
    )


async def setup(
    bootstrap: str, topic_factory: Callable[..., Awaitable[str]], tmp_path: Path
) -> tuple[Any, Path, Path, CallerSigner, CallerSigner]:
    """Topics, a data dir holding the victim's session (secret text), and a keyring of
    two hosts: ``good`` for /work/good, ``hostile`` for /work/bad."""
    topics = await create_topics(bootstrap, topic_factory, events=1, requests=2)
    data = tmp_path / "data"
    good, good_entry = signer_for(tmp_path, "good", ["/work/good"])
    hostile, hostile_entry = signer_for(tmp_path, "hostile", ["/work/bad"])
    keyring = tmp_path / "keyring.json"
    keyring.write_text(json.dumps({"keys": [good_entry, hostile_entry]}))
    async with running_indexer(data, topics.kafka(), batch_ms=20), RawProducer(bootstrap) as p:
        key = routing_key(VICTIM)
        await p.send_json(topics.events, header_record(VICTIM), key=key)
        await p.send_json(
            topics.events, events_record(VICTIM["id"], [user(0, "victimsecret needle")]), key=key
        )
        await wait_until(
            lambda: caught_up(data, bootstrap, topics.events),
            timeout=60, what="the indexer to catch up",
        )
    return topics, data, keyring, good, hostile


async def test_a_captured_token_answers_only_its_identical_request(kafka_case: KafkaCase) -> None:
    kafka_bootstrap, topic_factory, unique_name, tmp_path = kafka_case.parts()
    topics, data, keyring, good, _ = await setup(kafka_bootstrap, topic_factory, tmp_path)
    thief_topic = await topic_factory(name=f"{topics.replies}.thief")
    kafka = topics.kafka()
    async with (
        running_worker(data, kafka, unique_name("group"), keyring=keyring) as worker,
        SessionqClient(kafka, signer=good) as client,
        RawProducer(kafka_bootstrap) as producer,
        ReplyTap(kafka_bootstrap, topics.replies) as victim_tap,
        ReplyTap(kafka_bootstrap, thief_topic) as thief_tap,
    ):
        await wait_assigned(worker, 2)
        reply = await client.call(
            "session_trace", {}, session_id=VICTIM["id"], workspace="/work/good",
            timeout_ms=20000, request_id="victim-1",
        )
        assert reply.ok, reply
        # the signed record as anyone who saw it has it (a dead letter keeps it whole)
        captured = next(
            json.loads(r.value) for r in await read_topic(kafka_bootstrap, topics.requests)
            if json.loads(r.value).get("id") == "victim-1"
        )
        rebound = {
            **captured, "tool": "session_search", "arguments": {"query": "victimsecret"},
            "reply_to": thief_topic,
        }
        await producer.send_json(topics.requests, rebound, key="/work/good")
        thief = (await thief_tap.wait_for(["victim-1"], timeout=60))["victim-1"]
        assert thief.error is not None and thief.error.code == CALLER_UNAUTHENTICATED, thief
        assert "victimsecret" not in thief.model_dump_json()
        # the identical record again (a re-delivery) is answered, to its own topic
        await producer.send_json(topics.requests, captured, key="/work/good")
        await wait_until(
            lambda: len(victim_tap.by_id().get("victim-1", [])) == 2,
            timeout=60, what="the re-delivered request's reply",
        )
        assert all(r.ok for r in victim_tap.by_id()["victim-1"])


async def test_one_hosts_backlog_delays_only_itself(kafka_case: KafkaCase) -> None:
    """The hostile host (its key covers only /work/bad) floods validly signed requests for
    callers that do not exist, plus 50 byte-identical replays of one of them; the good
    host's call is answered meanwhile. Every hostile record is resolved (beyond its
    share at once, ``SESSION_QUERY_BUSY``), the replays get no reply of their own, and
    the committed offsets reach the end."""
    kafka_bootstrap, topic_factory, unique_name, tmp_path = kafka_case.parts()
    topics, data, keyring, good, hostile = await setup(kafka_bootstrap, topic_factory, tmp_path)
    kafka = topics.kafka()
    records = []
    for i in range(FLOOD):
        body = {
            "v": 1, "kind": "request", "id": f"flood-{i}", "reply_to": topics.replies,
            "tool": "session_trace", "arguments": {}, "timeout_ms": 60000,
            "caller": {"session_id": f"nobody-{i}"},
        }
        token = hostile.sign(body, "/work/bad")
        records.append({**body, "caller": {"session_id": f"nobody-{i}", "token": token}})
    async with (
        running_worker(data, kafka, unique_name("group"), keyring=keyring) as worker,
        SessionqClient(kafka, signer=good) as client,
        RawProducer(kafka_bootstrap) as producer,
        ReplyTap(kafka_bootstrap, topics.replies) as tap,
    ):
        await wait_assigned(worker, 2)
        for record in records:
            await producer.send_json(topics.requests, record, key="/work/bad")
        for _ in range(50):
            await producer.send_json(topics.requests, records[0], key="/work/bad")
        reply = await client.call(
            "session_trace", {}, session_id=VICTIM["id"], workspace="/work/good",
            timeout_ms=20000,
        )
        assert reply.ok, reply  # not held behind the hostile backlog
        flood_ids = [r["id"] for r in records]
        replies = await tap.wait_for(flood_ids, timeout=180)
        codes = [replies[i].error.code for i in flood_ids if replies[i].error is not None]
        assert len(codes) == FLOOD
        busy = codes.count("SESSION_QUERY_BUSY")
        assert busy >= FLOOD - worker.settings.admitted_per_host, codes[:5]
        assert set(codes) <= {"SESSION_QUERY_BUSY", "TOOL_TIMEOUT"}
        assert len(tap.by_id()["flood-0"]) == 1  # its 50 replays joined it
        ends = await end_offsets(kafka_bootstrap, topics.requests)
        await wait_until(
            lambda: _committed_to(kafka_bootstrap, worker.settings.group, topics.requests, ends),
            timeout=60, what="the committed offsets to reach the end",
        )


async def _committed_to(bootstrap: str, group: str, topic: str, ends: dict[int, int]) -> bool:
    committed = await committed_offsets(bootstrap, group, topic)
    return all(committed.get(p, 0) >= end for p, end in ends.items())


async def test_missing_reply_topics_are_dead_lettered_at_once(
    kafka_case: KafkaCase, caplog: pytest.LogCaptureFixture
) -> None:
    kafka_bootstrap, topic_factory, unique_name, tmp_path = kafka_case.parts()
    topics, data, keyring, good, _ = await setup(kafka_bootstrap, topic_factory, tmp_path)
    kafka = topics.kafka()
    caplog.set_level(logging.INFO, logger="sessionq")
    async with (
        running_worker(data, kafka, unique_name("group"), keyring=keyring) as worker,
        SessionqClient(kafka, signer=good) as client,
        RawProducer(kafka_bootstrap) as producer,
    ):
        await wait_assigned(worker, 2)
        for i in range(FLOOD):  # unauthenticated, to topics the pattern allows
            await producer.send_json(
                topics.requests,
                {"v": 1, "kind": "request", "id": f"nx-{i}", "tool": "session_trace",
                 "reply_to": f"{topics.replies}.nx-{i % 100}", "arguments": {},
                 "caller": {"session_id": "x"}},
                key="/work/bad",
            )
        # behind them in their partition; no slot is held while the missing topics are
        # looked up, so it is answered well in time
        reply = await client.call(
            "session_trace", {}, session_id=VICTIM["id"], workspace="/work/good",
            timeout_ms=8000, routing_key="/work/bad",
        )
        assert reply.ok, reply
        await wait_until(
            lambda: has_records(kafka_bootstrap, topics.dlq, FLOOD),
            timeout=120, what="a dead letter for every missing-topic request",
        )
    letters = [json.loads(r.value) for r in await read_topic(kafka_bootstrap, topics.dlq)]
    assert {x["code"] for x in letters} == {"SESSIONQ_REPLY_TOPIC_MISSING"}
    assert len({x["source"]["offset"] for x in letters}) == FLOOD
    assert worker.metrics.registry.get_sample_value("sessionq_reply_topic_missing_total") == FLOOD
    noted = [r for r in caplog.records if "does not exist" in r.getMessage()]
    assert 1 <= len(noted) <= 100  # one line per topic (per minute), not per record
    ours = [r for r in caplog.records if r.name.startswith("sessionq")]
    assert not [r for r in ours if r.levelno >= logging.ERROR]  # no error per record


async def test_a_flood_of_distinct_missing_reply_topics_logs_one_line(
    kafka_case: KafkaCase, caplog: pytest.LogCaptureFixture
) -> None:
    """The warning is rate-limited for the whole worker, not per topic name: 3,000
    records naming 3,000 different missing topics log one line (within a minute), and
    each record is still dead-lettered and counted."""
    kafka_bootstrap, topic_factory, unique_name, tmp_path = kafka_case.parts()
    flood = 3_000
    topics, data, keyring, _, _ = await setup(kafka_bootstrap, topic_factory, tmp_path)
    kafka = topics.kafka()
    caplog.set_level(logging.INFO, logger="sessionq")
    async with (
        running_worker(data, kafka, unique_name("group"), keyring=keyring) as worker,
        RawProducer(kafka_bootstrap) as producer,
    ):
        await wait_assigned(worker, 2)
        for i in range(flood):
            await producer.send_json(
                topics.requests,
                {"v": 1, "kind": "request", "id": f"nx-{i}", "tool": "session_trace",
                 "reply_to": f"{topics.replies}.nx-{i}", "arguments": {},
                 "caller": {"session_id": "x"}},
                key="/work/bad",
            )
        await wait_until(
            lambda: has_records(kafka_bootstrap, topics.dlq, flood),
            timeout=300, what="a dead letter for every missing-topic request",
        )
        counted = worker.metrics.registry.get_sample_value("sessionq_reply_topic_missing_total")
    assert counted == flood
    noted = [r for r in caplog.records if r.getMessage().startswith("reply_to ")]
    assert len(noted) == 1, [r.getMessage() for r in noted[:5]]
    assert noted[0].levelno == logging.WARNING
