"""Issue 10 item 2/7 over a real broker: a request record's size is bounded before it is
parsed. The product's requests topic refuses records over 1 MiB; a topic created
elsewhere with a larger limit still gets the worker's own check (a dead letter, the
offset committed, the other calls answered); the host client answers ``INVALID_ARGS``
itself rather than sending what would be refused."""

from __future__ import annotations

from pathlib import Path

import aiokafka.errors
import orjson
import pytest

from tests.builders import header, plain, user
from tests.fixtures.kafka import TopicFactory, UniqueName
from tests.fixtures.waiting import wait_until
from tests.kafka.harness import (
    Topics,
    end_offsets,
    has_records,
    product_topics,
    read_topic,
    running_stack,
)
from tests.kafka.records import RawProducer, by_source_offset, dead_letters, request_record
from worker.contract.envelopes import MAX_REQUEST_BYTES

pytestmark = pytest.mark.kafka

WS = "/abuse/size"
HEAD = header("sess-size", cwd=WS)
EVENTS = [plain(0, "turn/start", {"turn": 1}), user(1, "size needle")]


async def test_the_product_topic_refuses_records_over_the_bound(
    kafka_bootstrap: str, unique_name: UniqueName
) -> None:
    async with (
        product_topics(kafka_bootstrap, unique_name("size")) as (topics, _),
        RawProducer(kafka_bootstrap, max_request_size=8 * 1024 * 1024) as producer,
    ):
        fat = orjson.dumps({"v": 1, "kind": "cancel", "id": "x", "reason": "r" * 5_000_000})
        with pytest.raises(aiokafka.errors.MessageSizeTooLargeError):
            await producer.send(topics.requests, fat, key=WS)
        assert sum((await end_offsets(kafka_bootstrap, topics.requests)).values()) == 0


async def test_an_oversized_record_is_dead_lettered_unparsed_and_the_client_refuses_one(
    kafka_bootstrap: str, topic_factory: TopicFactory, unique_name: UniqueName, tmp_path: Path
) -> None:
    roomy = {"max.message.bytes": str(8 * 1024 * 1024)}  # as a hand-made topic might be
    topics = Topics(
        kafka_bootstrap,
        events=await topic_factory(partitions=1),
        requests=await topic_factory(partitions=1, configs=roomy),
        replies=await topic_factory(partitions=1),
        dlq=await topic_factory(partitions=1, configs=roomy),
    )
    async with (
        running_stack(topics, tmp_path / "data", unique_name("group")) as s,
        RawProducer(kafka_bootstrap, max_request_size=8 * 1024 * 1024) as big,
    ):
        await s.publish_session(HEAD, EVENTS)
        await s.indexed()
        huge = request_record(
            "huge",
            topics.replies,
            "session_search",
            {"query": "size needle", "pad": "p" * (2 * MAX_REQUEST_BYTES)},
            session_id="sess-size",
        )
        value = orjson.dumps(huge)
        meta = await big.send(topics.requests, value, key=WS)
        good = request_record(
            "good",
            topics.replies,
            "session_search",
            {"query": "size needle"},
            session_id="sess-size",
        )
        after = await s.producer.send_json(topics.requests, good, key=WS)
        assert (await s.tap.wait_for(["good"], timeout=30))["good"].ok
        await wait_until(
            lambda: has_records(kafka_bootstrap, topics.dlq, 1),
            timeout=30,
            what="the oversized request's dead letter",
        )
        (letter,) = by_source_offset(dead_letters(await read_topic(kafka_bootstrap, topics.dlq)))[
            meta.offset
        ]
        assert letter["code"] == "SESSIONQ_INVALID_REQUEST"
        assert letter["reason"].startswith(f"request record is {len(value)} bytes")
        assert letter["reason"].endswith(f"the maximum is {MAX_REQUEST_BYTES} (not parsed)")
        await wait_until(
            lambda: s.committed_past(after.partition, after.offset + 1),
            timeout=30,
            what="the requests partition to be committed past both",
        )
        assert "huge" not in s.tap.by_id()  # no reply: nobody's id was read

        # The host client does not send what the worker would refuse.
        before = await end_offsets(kafka_bootstrap, topics.requests)
        reply = await s.client.call(
            "session_search",
            {"query": "size needle", "pad": "p" * MAX_REQUEST_BYTES},
            session_id="sess-size",
            workspace=WS,
        )
        assert reply.error is not None and reply.error.code == "INVALID_ARGS"
        assert f"the maximum is {MAX_REQUEST_BYTES}" in reply.error.message
        assert await end_offsets(kafka_bootstrap, topics.requests) == before
