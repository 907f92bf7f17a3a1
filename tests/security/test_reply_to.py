"""``reply_to`` is an allow-list, not an open relay (``worker.transports.kafka.worker``
``reply_topic_refusal``): a request may name only the replies topic or a topic matching
the worker's ``reply_topics`` patterns. Anything else — sessionq's own topics, Kafka's
internal ones, any unlisted topic — is dead-lettered without any work and without a
single record produced to it, and its offset is committed like any answered request."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from indexer.errors import REPLY_TOPIC_REFUSED
from indexer.settings import KafkaSettings
from tests.builders import first_step, header
from tests.fixtures.kafka import TopicFactory
from tests.fixtures.waiting import wait_until
from tests.kafka.harness import Stack, end_offsets, read_topic, session_stack
from tests.kafka.records import dead_letters, request_record
from worker.settings import REPLY_TOPIC_PATTERNS, WorkerSettings
from worker.transports.kafka.reply_topics import reply_topic_refusal

WS = "/security/reply-to"
C = header("sess-c", cwd=WS)
C_EVENTS = first_step("where do replies go")


def worker_settings(**kafka: str) -> WorkerSettings:
    """Only the fields ``reply_topic_refusal`` reads (no data dir, no keyring)."""
    return WorkerSettings.model_construct(
        kafka=KafkaSettings(bootstrap="localhost:9092", **kafka),
        reply_topics=list(REPLY_TOPIC_PATTERNS),
    )


# ---- the rule (no broker) ------------------------------------------------------------------------
@pytest.mark.parametrize(
    "topic", ["sessionq.replies", "sessionq.replies.host-a", "sessionq.replies.a.b"]
)
def test_the_default_patterns_allow_the_replies_topics(topic: str) -> None:
    assert reply_topic_refusal(topic, worker_settings()) is None


@pytest.mark.parametrize(
    ("topic", "why"),
    [
        ("sessionq.events", "a sessionq topic that takes no replies"),
        ("sessionq.requests", "a sessionq topic that takes no replies"),
        ("sessionq.dlq", "a sessionq topic that takes no replies"),
        ("__consumer_offsets", "an internal topic"),
        ("__transaction_state", "an internal topic"),
        ("orders", "it matches no allowed reply topic"),
        ("sessionq.replies-x", "it matches no allowed reply topic"),
        ("SESSIONQ.REPLIES", "it matches no allowed reply topic"),  # case-sensitive
        ("sessionq.replies.a b", "not a valid topic name"),
        ("sessionq.replies." + "x" * 300, "not a valid topic name"),
    ],
)
def test_everything_else_is_refused_with_a_reason_naming_the_topic(topic: str, why: str) -> None:
    reason = reply_topic_refusal(topic, worker_settings())
    assert reason is not None and f"refused: {why}" in reason, reason
    assert topic[:200] in reason
    assert len(reason) < 400  # a long name is shown cut


def test_sessionq_and_internal_topics_are_refused_whatever_the_patterns() -> None:
    settings = WorkerSettings.model_construct(
        kafka=KafkaSettings(bootstrap="localhost:9092", events_topic="sq.e", dlq_topic="sq.d"),
        reply_topics=["*"],
    )
    assert reply_topic_refusal("anything.at.all", settings) is None
    for topic in ("sq.e", "sq.d", "sessionq.requests", "__consumer_offsets"):
        assert reply_topic_refusal(topic, settings) is not None, topic


def test_the_configured_replies_topic_is_always_allowed() -> None:
    settings = WorkerSettings.model_construct(
        kafka=KafkaSettings(bootstrap="localhost:9092", replies_topic="acme.answers"),
        reply_topics=[],
    )
    assert reply_topic_refusal("acme.answers", settings) is None
    assert reply_topic_refusal("sessionq.replies", settings) is not None


def test_the_env_variable_is_a_pathsep_list(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    monkeypatch.setenv("SESSIONQ_REPLY_TOPICS", os.pathsep.join(["a.replies", "b.replies.*"]))
    monkeypatch.setenv("SESSIONQ_INSECURE_UNAUTHENTICATED_CALLERS", "true")  # where required
    settings = WorkerSettings(data=Path("/nonexistent"), kafka={"bootstrap": "h:1"})  # type: ignore[arg-type]
    assert settings.reply_topics == ["a.replies", "b.replies.*"]


# ---- over a real broker --------------------------------------------------------------------------
stack = session_stack(C, C_EVENTS)


@pytest.mark.kafka
async def test_refused_reply_topics_get_a_dead_letter_and_nothing_else(
    stack: Stack,
    topic_factory: TopicFactory,
) -> None:
    topics = stack.topics
    unlisted = await topic_factory(partitions=1)  # exists, but no pattern matches it
    refused = [topics.events, topics.requests, topics.dlq, "__consumer_offsets", unlisted]
    worker = stack.worker
    produced: list[str] = []
    answered: list[str] = []
    real_send, real_answer = worker.producer.send, worker.pipeline.answer

    async def send(topic: str, *args: Any, **kwargs: Any) -> Any:
        produced.append(topic)
        return await real_send(topic, *args, **kwargs)

    async def answer(call: Any, **kwargs: Any) -> Any:
        answered.append(call.id)
        return await real_answer(call, **kwargs)

    worker.producer.send = send  # type: ignore[method-assign]
    worker.pipeline.answer = answer  # type: ignore[method-assign]
    ends_before = {t: await end_offsets(topics.bootstrap, t) for t in (topics.events, unlisted)}

    sent = []
    for i, topic in enumerate(refused):
        request = request_record(f"refused-{i}", topic, "session_trace", {}, session_id="sess-c")
        sent.append((await stack.producer.send_json(topics.requests, request, key=WS), topic))
    # and an invalid request (an INVALID_ARGS reply when allowed) to a refused topic
    bad = {**request_record("refused-bad", topics.events, "session_trace", {}), "extra": 1}
    sent.append((await stack.producer.send_json(topics.requests, bad, key=WS), topics.events))
    good = request_record("allowed", topics.replies, "session_trace", {}, session_id="sess-c")
    after = await stack.producer.send_json(topics.requests, good, key=WS)
    assert {meta.partition for meta, _ in sent} == {after.partition}

    assert (await stack.tap.wait_for(["allowed"], timeout=30))["allowed"].ok
    await wait_until(
        lambda: stack.committed_past(after.partition, after.offset + 1),
        timeout=30,
        what="the partition to be committed past the refused requests",
        interval=0.2,
    )
    letters = {
        letter["source"]["offset"]: letter
        for letter in dead_letters(await read_topic(topics.bootstrap, topics.dlq))
    }
    assert sorted(letters) == sorted(meta.offset for meta, _ in sent)
    for meta, topic in sent:
        letter = letters[meta.offset]
        assert letter["code"] == REPLY_TOPIC_REFUSED == "SESSIONQ_REPLY_TOPIC_REFUSED"
        assert letter["reason"].startswith(f"reply_to {topic!r} refused"), letter["reason"]
        assert letter["source"]["topic"] == topics.requests
    # no work, and not one record to a refused topic
    assert answered == ["allowed"]
    assert set(produced) == {topics.dlq, topics.replies}
    assert produced.count(topics.replies) == 1
    for topic, ends in ends_before.items():
        assert await end_offsets(topics.bootstrap, topic) == ends, topic
    requests_end = await end_offsets(topics.bootstrap, topics.requests)
    assert sum(requests_end.values()) == len(sent) + 1  # only what the test sent
    assert set(stack.tap.by_id()) == {"allowed"}
