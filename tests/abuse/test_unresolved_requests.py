"""Issue 10 item 1: whatever the reply producer raises, a request's offset is resolved
(a reply, a small error reply or a dead letter) and the partition's committed offset
moves past it. Before, any error ``Producer.send`` did not map to ``UndeliverableError``
left no reply, no dead letter and an offset that was never committed."""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiokafka.errors
import pytest

from tests.builders import header, plain, user
from tests.fixtures.kafka import TopicFactory, UniqueName
from tests.fixtures.waiting import wait_until
from tests.kafka.harness import Stack, has_records, read_topic, stack_with_session
from tests.kafka.records import by_source_offset, dead_letters, request_record
from worker.transports.kafka import worker as worker_module

pytestmark = pytest.mark.kafka

WS = "/abuse/unresolved"
C = header("sess-u", cwd=WS)
C_EVENTS = [plain(0, "turn/start", {"turn": 1}), user(1, "hello")]


def _error_classes() -> list[type[BaseException]]:
    """Every exception class aiokafka.errors defines, plus a plain RuntimeError."""
    found = {
        cls
        for _, cls in inspect.getmembers(aiokafka.errors, inspect.isclass)
        if issubclass(cls, Exception) and cls.__module__.startswith("aiokafka")
    }
    return [*sorted(found, key=lambda c: c.__name__), RuntimeError]


def _instance(cls: type[BaseException]) -> BaseException:
    try:
        return cls("injected")
    except TypeError:
        return cls()


@pytest.fixture
async def stack(
    kafka_bootstrap: str, topic_factory: TopicFactory, unique_name: UniqueName, tmp_path: Path
) -> AsyncIterator[Stack]:
    async with stack_with_session(
        kafka_bootstrap, topic_factory, unique_name("group"), tmp_path / "data", C, C_EVENTS
    ) as s:
        yield s


def _inject(stack: Stack, monkeypatch: pytest.MonkeyPatch, fail: Any) -> None:
    """Route the worker producer's underlying ``send_and_wait`` through ``fail(topic,
    key)``, which returns the exception to raise (or None to send)."""
    inner = stack.worker.producer._producer
    real = inner.send_and_wait

    async def send_and_wait(topic: str, value: bytes, *args: Any, **kwargs: Any) -> Any:
        error = fail(topic, kwargs.get("key"))
        if error is not None:
            raise error
        return await real(topic, value, *args, **kwargs)

    monkeypatch.setattr(inner, "send_and_wait", send_and_wait)


async def test_every_reply_error_class_is_dead_lettered_and_committed_past(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    topics = stack.topics
    classes = _error_classes()
    assert len(classes) > 20  # the module really was enumerated
    by_id = {f"err-{i}-{cls.__name__}": cls for i, cls in enumerate(classes)}

    def fail(topic: str, key: bytes | None) -> BaseException | None:
        if topic == topics.replies and key is not None and key.decode() in by_id:
            return _instance(by_id[key.decode()])
        return None

    _inject(stack, monkeypatch, fail)
    sent = {}
    for rid in by_id:
        record = request_record(rid, topics.replies, "session_trace", {}, session_id="sess-u")
        sent[rid] = await stack.producer.send_json(topics.requests, record, key=WS)
    good = request_record("good", topics.replies, "session_trace", {}, session_id="sess-u")
    after = await stack.producer.send_json(topics.requests, good, key=WS)
    assert (await stack.tap.wait_for(["good"], timeout=30))["good"].ok

    last = max(m.offset for m in sent.values() if m.partition == after.partition)
    await wait_until(
        lambda: stack.committed_past(after.partition, max(last, after.offset) + 1),
        timeout=60,
        what="the request partition to be committed past every failed reply",
        interval=0.2,
    )
    await wait_until(
        lambda: has_records(topics.bootstrap, topics.dlq, len(by_id)),
        timeout=60,
        what="a dead letter for every request whose reply failed",
    )
    letters = by_source_offset(dead_letters(await read_topic(topics.bootstrap, topics.dlq)))
    for meta in sent.values():
        (letter, *_) = letters[meta.offset]
        assert letter["code"] == "SESSIONQ_REPLY_FAILED", letter
        assert letter["reason"].startswith(("reply undeliverable", "reply failed")), letter
    assert stack.metric("sessionq_requests_unresolved_total") == 0
    assert set(stack.tap.by_id()) == {"good"}


async def test_reply_and_dead_letter_both_failing_still_finishes_the_offset(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    topics = stack.topics
    monkeypatch.setattr(worker_module, "RESOLVE_BACKOFF_S", 0.01)

    def fail(topic: str, key: bytes | None) -> BaseException | None:
        if topic == topics.dlq or (key == b"doomed" and topic == topics.replies):
            return RuntimeError("broker on fire")
        return None

    _inject(stack, monkeypatch, fail)
    doomed = request_record("doomed", topics.replies, "session_trace", {}, session_id="sess-u")
    meta = await stack.producer.send_json(topics.requests, doomed, key=WS)
    good = request_record("good", topics.replies, "session_trace", {}, session_id="sess-u")
    after = await stack.producer.send_json(topics.requests, good, key=WS)
    assert (await stack.tap.wait_for(["good"], timeout=30))["good"].ok
    await wait_until(
        lambda: stack.committed_past(meta.partition, max(meta.offset, after.offset) + 1),
        timeout=30,
        what="the unresolvable request's offset to be committed anyway",
        interval=0.2,
    )
    assert stack.metric("sessionq_requests_unresolved_total") == 1
    assert await read_topic(topics.bootstrap, topics.dlq, timeout=2) == []


async def test_a_failing_answer_gets_a_small_error_reply(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first reply send fails with an unmapped error; the worker's error reply gets
    through, so the host hears TOOL_FAILED instead of nothing."""
    topics = stack.topics
    failed: list[bytes] = []

    def fail(topic: str, key: bytes | None) -> BaseException | None:
        if topic == topics.replies and key == b"flaky" and not failed:
            failed.append(key)
            return aiokafka.errors.KafkaConnectionError("injected")
        return None

    _inject(stack, monkeypatch, fail)
    flaky = request_record("flaky", topics.replies, "session_trace", {}, session_id="sess-u")
    meta = await stack.producer.send_json(topics.requests, flaky, key=WS)
    reply = (await stack.tap.wait_for(["flaky"], timeout=30))["flaky"]
    assert not reply.ok and reply.error is not None
    assert reply.error.code == "SESSION_QUERY_TOOL_FAILED"
    await wait_until(
        lambda: stack.committed_past(meta.partition, meta.offset + 1),
        timeout=30,
        what="the request's offset to be committed",
        interval=0.2,
    )
