"""Poison on the requests topic over a real broker: what nobody can be answered for lands
in the dead-letter topic (reason, source coordinates, original bytes), a request that
names its id and reply topic gets an ``INVALID_ARGS`` reply instead, and neither ever
stops the partition — including replies and dead letters the broker refuses."""

from __future__ import annotations

import base64
import uuid
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.builders import first_step, header, user
from tests.fixtures.kafka import UniqueName
from tests.fixtures.waiting import wait_until
from tests.kafka.harness import (
    Stack,
    Topics,
    has_records,
    product_topics,
    read_topic,
    running_stack,
    session_stack,
)
from tests.kafka.records import (
    RawProducer,
    assert_dead_letter,
    by_source_offset,
    dead_letters,
    events_record,
    header_record,
    request_record,
)

pytestmark = pytest.mark.kafka

WS = "/dlq/requests"
C = header("sess-c", cwd=WS)
C_EVENTS = first_step("echo after the poison")


stack = session_stack(C, C_EVENTS)


async def test_unparseable_requests_are_dead_lettered_and_later_requests_answered(
    stack: Stack,
) -> None:
    topics: Topics = stack.topics
    key = WS.encode()
    poisons: list[tuple[bytes | None, str]] = [
        (b"\x00not json", "record value is not JSON"),
        (orjson.dumps(["request"]), "invalid request envelope"),
        (orjson.dumps({"v": 1, "kind": "shout", "id": "r1"}), "invalid request envelope"),
        # A request without a reply topic cannot be answered.
        (
            orjson.dumps({"v": 1, "kind": "request", "id": "r2", "tool": "session_trace"}),
            "invalid request envelope at request.reply_to",
        ),
        (orjson.dumps({"v": 1, "kind": "cancel"}), "invalid request envelope at cancel.id"),
        (None, "record has no value"),
    ]
    sent = [(await stack.producer.send(topics.requests, v, key=key), v, r) for v, r in poisons]
    # The partition keeps flowing: a good request after the poison is answered.
    good = request_record("good", topics.replies, "session_trace", {}, session_id="sess-c")
    await stack.producer.send_json(topics.requests, good, key=key)
    replies = await stack.tap.wait_for(["good"], timeout=30)
    assert replies["good"].ok, replies["good"]

    await wait_until(
        lambda: has_records(topics.bootstrap, topics.dlq, len(poisons)),
        timeout=30,
        what="the dead letters",
    )
    # Requests are handled concurrently, so their dead letters may come in any order, and
    # delivery is at-least-once (a rebalance may dead-letter a record again).
    letters = by_source_offset(dead_letters(await read_topic(topics.bootstrap, topics.dlq)))
    assert sorted(letters) == [meta.offset for meta, *_ in sent]
    for meta, value, reason in sent:
        for letter in letters[meta.offset]:
            assert_dead_letter(
                letter,
                meta,
                topic=topics.requests,
                key=key,
                value=value,
                code="SESSIONQ_INVALID_REQUEST",
                reason=reason,
            )
    # None of them got a reply (there was nobody to answer).
    assert set(stack.tap.by_id()) == {"good"}


@pytest.mark.parametrize(
    ("change", "where"),
    [
        ({"tool": None}, "request.tool"),
        ({"timeout_ms": 0}, "request.timeout_ms"),
        ({"caller": {"session_id": "sess-c", "step_seq": -1}}, "request.caller.step_seq"),
        ({"caller": "sess-c"}, "request.caller"),
        ({"v": 2}, "request.v"),
        ({"surprise": True}, "request.surprise"),
    ],
    ids=["tool-null", "timeout-zero", "negative-step", "caller-string", "version-2", "extra-key"],
)
async def test_request_with_id_and_reply_topic_but_invalid_body_gets_invalid_args_reply(
    stack: Stack, change: dict[str, Any], where: str
) -> None:
    rid = str(uuid.uuid4())
    record = {
        **request_record(rid, stack.topics.replies, "session_trace", {}, session_id="sess-c"),
        **change,
    }
    await stack.producer.send_json(stack.topics.requests, record, key=WS)
    (reply,) = (await stack.tap.wait_for([rid], timeout=30)).values()
    assert not reply.ok and reply.error is not None, reply
    assert reply.error.code == "INVALID_ARGS"
    assert reply.error.message.startswith(f"invalid request envelope at {where}"), reply
    assert await read_topic(stack.topics.bootstrap, stack.topics.dlq) == []


@pytest.mark.slow
async def test_request_whose_reply_topic_does_not_exist_is_dead_lettered_not_stuck(
    stack: Stack, unique_name: UniqueName
) -> None:
    """A reply that can never be delivered must not pin the partition's committed offset
    (every later request would be answered again after each restart or rebalance)."""
    topics = stack.topics
    missing = f"{topics.replies}.{unique_name('never-created')}"  # allowed, but not there
    stuck = request_record("stuck", missing, "session_trace", {}, session_id="sess-c")
    meta = await stack.producer.send_json(topics.requests, stuck, key=WS)
    good = request_record("after", topics.replies, "session_trace", {}, session_id="sess-c")
    after = await stack.producer.send_json(topics.requests, good, key=WS)
    assert after.partition == meta.partition
    # The request behind it is not held up.
    assert (await stack.tap.wait_for(["after"], timeout=10))["after"].ok

    await wait_until(
        lambda: has_records(topics.bootstrap, topics.dlq, 1),
        timeout=60,  # the reply producer gives up on an unknown topic after 40 s
        what="the undeliverable request to be dead-lettered",
        interval=0.5,
    )
    letter = dead_letters(await read_topic(topics.bootstrap, topics.dlq))[0]
    assert letter["source"]["topic"] == topics.requests
    assert letter["source"]["offset"] == meta.offset
    assert letter["value_b64"] == base64.b64encode(orjson.dumps(stuck)).decode()
    assert missing in letter["reason"], letter["reason"]
    await wait_until(
        lambda: stack.committed_past(meta.partition, after.offset + 1),
        timeout=30,
        what="the request partition's offset to be committed past both requests",
        interval=0.2,
    )


@pytest.mark.slow
async def test_large_unparseable_request_is_dead_lettered_and_committed_past(
    kafka_bootstrap: str, unique_name: UniqueName, tmp_path: Path
) -> None:
    """A request record near the requests topic's size limit (1 MiB by default) is
    poison too; its dead letter (base64, +33%) must still be written and the partition
    must move on. Today the DLQ send fails, the record is only logged as "not answered"
    and the partition's committed offset stays before it forever."""
    garbage = b"\xff" * 900_000
    async with (
        product_topics(kafka_bootstrap, unique_name("sq"), partitions=1) as (topics, _),
        running_stack(topics, tmp_path / "data", unique_name("group")) as stack,
    ):
        await stack.publish_session(C, C_EVENTS)
        await stack.indexed()
        poison = await stack.producer.send(topics.requests, garbage, key=WS)
        good = request_record("after", topics.replies, "session_trace", {}, session_id="sess-c")
        after = await stack.producer.send_json(topics.requests, good, key=WS)
        assert (await stack.tap.wait_for(["after"], timeout=15))["after"].ok
        await wait_until(
            lambda: stack.committed_past(after.partition, after.offset + 1),
            timeout=15,
            what="the request partition to be committed past the poison request",
            interval=0.2,
        )
        letter = dead_letters(await read_topic(kafka_bootstrap, topics.dlq))[0]
        assert letter["source"]["offset"] == poison.offset
        assert base64.b64decode(letter["value_b64"]) == garbage


@pytest.mark.slow
async def test_reply_too_large_for_the_reply_topic_still_answers_the_request(
    kafka_bootstrap: str, unique_name: UniqueName, tmp_path: Path
) -> None:
    """``session_event_read`` returns a whole event; events may be up to 8 MiB (events
    topic config) but the replies topic keeps the 1 MiB default. Every request must get
    exactly one reply: the full text, or an error reply when the text cannot be sent.
    Today the broker rejects the reply, the host gets nothing (its own timeout fires) and
    the request offset is never committed."""
    huge = "lorem ipsum " * 150_000  # 1.8 MB of message text
    rid = str(uuid.uuid4())
    async with (
        product_topics(kafka_bootstrap, unique_name("sq"), partitions=1) as (topics, _),
        running_stack(topics, tmp_path / "data", unique_name("group")) as stack,
    ):
        async with RawProducer(kafka_bootstrap, max_request_size=8 * 1024 * 1024) as big:
            key = WS.encode()
            await big.send_json(topics.events, header_record(C), key=key)
            await big.send_json(topics.events, events_record("sess-c", C_EVENTS), key=key)
            await big.send_json(topics.events, events_record("sess-c", [user(3, huge)]), key=key)
        await stack.indexed()
        request = request_record(
            rid,
            topics.replies,
            "session_event_read",
            {"seq": 3},
            session_id="sess-c",
            timeout_ms=5000,
        )
        meta = await stack.producer.send_json(topics.requests, request, key=WS)
        (reply,) = (await stack.tap.wait_for([rid], timeout=10)).values()
        if reply.ok:
            assert reply.text is not None and huge.strip() in reply.text
        else:
            assert reply.error is not None and reply.error.code.startswith("SESSION_QUERY_")
        await wait_until(
            lambda: stack.committed_past(meta.partition, meta.offset + 1),
            timeout=15,
            what="the request offset to be committed",
            interval=0.2,
        )
