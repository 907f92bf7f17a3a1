"""Lone UTF-16 surrogates over Kafka: a JavaScript host's string cut mid-emoji (a stream
delta: ``"# Project \\ud83d"`` as JSON text) is data on every surface — published,
indexed, read back as written, searchable by its neighbouring words, sent in a signed
call and answered (docs/host-integration.md, "Strings")."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from indexer.kafka.client import Producer
from indexer.model.records import EventsRecord, HeaderRecord, decode_record
from indexer.settings import KafkaSettings
from tests.builders import chunk, header, plain, title, user
from tests.fixtures.kafka import TopicFactory, UniqueName
from tests.fixtures.waiting import wait_until
from tests.kafka.harness import (
    caught_up,
    create_topics,
    has_records,
    held_sessions,
    publish,
    read_topic,
    running_indexer,
    running_stack,
    running_worker,
    wait_assigned,
)
from tests.kafka.records import RawProducer, events_record, header_record
from worker.authn.keyring import keyring_entry
from worker.authn.tokens import CallerSigner, generate_key_pair
from worker.contract.jsjson import js_stringify
from worker.host.client import SessionqClient
from worker.host.publisher import Publisher

pytestmark = pytest.mark.kafka

CWD = "/home/dev/app"
SPLIT = "44444444-4444-4444-8444-444444444444"  # its log holds lone surrogates
PLAIN = "55555555-5555-4555-8555-555555555555"
ODD = "66666666-6666-4666-8666-666666666666"  # its cwd holds one: no Kafka key
CALLER = "77777777-7777-4777-8777-777777777777"
SPLIT_EVENTS = [
    plain(0, "turn/start", {"turn": 1}),
    plain(1, "step/start", {"turn": 1, "step": 1}),
    user(2, "# Project \ud83d and the wombat"),
    chunk(3, "smile \ud83d"),
    chunk(4, "\ude00 done"),
    title(5, "Project \ud83d"),
]
CALLER_EVENTS = SPLIT_EVENTS[:2]


def as_javascript_writes(value: Any) -> bytes:
    """``JSON.stringify(value)``: a lone surrogate as its lowercase escape, the rest UTF-8."""
    return js_stringify(value, indent=None).encode()


def write_log(path: Path, head: Mapping[str, Any], events: Sequence[Mapping[str, Any]]) -> None:
    """A dsh log as a JavaScript host writes it, one JSON text per line."""
    lines = [as_javascript_writes(dict(head)), *(as_javascript_writes(dict(e)) for e in events)]
    path.write_bytes(b"".join(line + b"\n" for line in lines))


async def test_publish_sends_every_log_of_a_run_a_lone_surrogate_as_written(
    kafka_bootstrap: str, topic_factory: TopicFactory, tmp_path: Path
) -> None:
    """A log holding lone surrogates is published with them; a log that cannot be (its
    routing key is no Kafka key) is reported, none of it is sent, and the run goes on."""
    topics = await create_topics(kafka_bootstrap, topic_factory)
    logs = tmp_path / "logs"
    logs.mkdir()
    write_log(logs / "1-split.jsonl", header(SPLIT, cwd=CWD), SPLIT_EVENTS)
    write_log(logs / "2-odd.jsonl", header(ODD, cwd=f"{CWD}/\ud83d"), CALLER_EVENTS)
    write_log(logs / "3-plain.jsonl", header(PLAIN, cwd=CWD), [*CALLER_EVENTS, user(2, "hi")])

    publisher = await publish(kafka_bootstrap, topics.events, [logs])

    assert (publisher.summary.sessions, publisher.summary.events) == (2, 9)
    assert list(publisher.rejected) == [str(logs / "2-odd.jsonl")]
    assert "2-odd.jsonl" in publisher.rejected[str(logs / "2-odd.jsonl")]
    records = await read_topic(kafka_bootstrap, topics.events)
    decoded = [decode_record(r.value) for r in records]
    assert [(r.kind, r.header["id"] if isinstance(r, HeaderRecord) else r.session_id)
            for r in decoded] == [("header", SPLIT), ("events", SPLIT),
                                  ("header", PLAIN), ("events", PLAIN)]
    assert isinstance(decoded[1], EventsRecord)
    assert decoded[1].events == SPLIT_EVENTS
    assert b'"# Project \\ud83d and the wombat"' in records[1].value


async def test_publish_follow_sends_an_appended_lone_surrogate(
    kafka_bootstrap: str, topic_factory: TopicFactory, tmp_path: Path
) -> None:
    topics = await create_topics(kafka_bootstrap, topic_factory)
    log = tmp_path / "logs" / "split.jsonl"
    log.parent.mkdir()
    write_log(log, header(SPLIT, cwd=CWD), SPLIT_EVENTS[:2])
    producer = Producer(KafkaSettings(bootstrap=kafka_bootstrap), client_id="test-follow")
    await producer.start()
    publisher = Publisher(producer, topics.events)
    following = asyncio.create_task(publisher.run([log.parent], follow=True))

    async def sent(n: int) -> bool:
        if following.done():  # a crash says why at once
            following.result()
        return await has_records(kafka_bootstrap, topics.events, n)

    try:
        await wait_until(lambda: sent(2), timeout=30, what="the log to be published")
        with log.open("ab") as f:
            f.write(b"".join(as_javascript_writes(e) + b"\n" for e in SPLIT_EVENTS[2:]))
        await wait_until(lambda: sent(3), timeout=30, what="the appended events")
    finally:
        await publisher.stop()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(following, 30)
        await producer.stop()
    appended = decode_record((await read_topic(kafka_bootstrap, topics.events))[2].value)
    assert isinstance(appended, EventsRecord)
    assert appended.events == SPLIT_EVENTS[2:]
    assert publisher.rejected == {}


async def test_a_javascript_hosts_record_is_indexed_read_back_and_searchable(
    kafka_bootstrap: str, topic_factory: TopicFactory, unique_name: UniqueName, tmp_path: Path
) -> None:
    """The events record is applied (no dead letter, no held session); reading it prints
    the escape as written; its neighbouring words find it; a title holding one reaches
    the host as the stored escape."""
    topics = await create_topics(kafka_bootstrap, topic_factory, events=1, requests=1)
    data = tmp_path / "data"
    async with running_stack(topics, data, unique_name("group")) as s:
        for head, events in ((header(SPLIT, cwd=CWD), SPLIT_EVENTS),
                             (header(CALLER, cwd=CWD), CALLER_EVENTS)):
            await s.producer.send(topics.events, as_javascript_writes(header_record(head)), key=CWD)
            await s.producer.send(
                topics.events, as_javascript_writes(events_record(head["id"], events)), key=CWD
            )
        await s.indexed()
        assert held_sessions(data) == {}
        assert await read_topic(kafka_bootstrap, topics.dlq) == []

        async def call(tool: str, arguments: dict[str, Any]) -> str:
            reply = await s.client.call(
                tool, arguments, session_id=CALLER, step_seq=1, min_seq=1, timeout_ms=20000,
                routing_key=CWD,
            )
            assert reply.ok, reply.error
            return reply.text or ""

        read = await call("session_event_read", {"session_id": SPLIT, "seq": 2})
        assert '"text": "# Project \\ud83d and the wombat"' in read
        halves = [await call("session_event_read", {"session_id": SPLIT, "seq": seq})
                  for seq in (3, 4)]
        assert '"text": "smile \\ud83d"' in halves[0] and '"text": "\\ude00 done"' in halves[1]
        for query in ("project", "and the wombat"):  # the words either side of it
            found = await call("session_event_search", {"query": query, "session_id": SPLIT})
            assert "seq 2 | user/message" in found, query
        titled = await call("session_search", {"query": "wombat"})
        assert f"Session {SPLIT} — Project \ud83d" in titled
    replies = [r.value for r in await read_topic(kafka_bootstrap, topics.replies)]
    assert any(b"Project \\ud83d" in value for value in replies)


async def test_a_signed_call_holding_a_lone_surrogate_is_answered(
    kafka_bootstrap: str, topic_factory: TopicFactory, unique_name: UniqueName, tmp_path: Path
) -> None:
    """The host's digest of the request and the worker's agree (JavaScript's JCS of the
    string), so the token vouches for it: the call is answered, not refused."""
    topics = await create_topics(kafka_bootstrap, topic_factory, events=1, requests=1)
    kafka = topics.kafka()
    data = tmp_path / "data"
    private, public = generate_key_pair()
    (tmp_path / "host.key").write_text(private)
    signer = CallerSigner.from_file("host", tmp_path / "host.key")
    keyring = tmp_path / "keyring.json"
    keyring.write_text(json.dumps({"keys": [keyring_entry("host", public, [CWD])]}))
    async with running_indexer(data, kafka, batch_ms=20), RawProducer(kafka_bootstrap) as raw:
        for head, events in ((header(SPLIT, cwd=CWD), SPLIT_EVENTS),
                             (header(CALLER, cwd=CWD), CALLER_EVENTS)):
            await raw.send(topics.events, as_javascript_writes(header_record(head)), key=CWD)
            await raw.send(
                topics.events, as_javascript_writes(events_record(head["id"], events)), key=CWD
            )
        await wait_until(
            lambda: caught_up(data, kafka_bootstrap, topics.events),
            timeout=60,
            what="the indexer to catch up",
        )
        async with (
            running_worker(data, kafka, unique_name("group"), keyring=keyring) as worker,
            SessionqClient(kafka, signer=signer) as client,
        ):
            await wait_assigned(worker, 1)
            reply = await client.call(
                "session_event_search", {"query": "Project \ud83d", "session_id": SPLIT},
                session_id=CALLER, step_seq=1, min_seq=1, workspace=CWD, timeout_ms=20000,
            )
    assert reply.ok, reply.error
    assert "seq 2 | user/message" in (reply.text or "")
