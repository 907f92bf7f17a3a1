"""Kafka fixtures: one broker per test session, uniquely named topics per test (a plugin
of the root ``tests/conftest.py``, so ``tests/kafka`` and ``tests/security`` share it).

``kafka_bootstrap`` starts (or picks, see ``tests/kafka/broker.py``) the broker the
first time a test asks for it and stops it when the session ends. Tests that need
Kafka are marked ``@pytest.mark.kafka``; tests using these fixtures get the marker
automatically, so ``pytest -m "not kafka"`` never starts a broker.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import pytest

from tests.kafka.broker import Broker, BrokerStartError, select_broker

KAFKA_FIXTURES = frozenset({"kafka_broker", "kafka_bootstrap", "topic_factory"})

UniqueName = Callable[..., str]
TopicFactory = Callable[..., Awaitable[str]]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        uses_kafka = KAFKA_FIXTURES.intersection(getattr(item, "fixturenames", ()))
        if uses_kafka and item.get_closest_marker("kafka") is None:
            item.add_marker(pytest.mark.kafka)


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    """The session's broker (external, testcontainers or local Apache Kafka)."""
    try:
        broker = select_broker(tmp_path_factory.mktemp("kafka-broker"))
    except BrokerStartError as exc:
        pytest.fail(f"could not start a Kafka broker:\n{exc}", pytrace=False)
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture(scope="session")
def kafka_bootstrap(kafka_broker: Broker) -> str:
    """``host:port`` of the session's broker, for ``bootstrap_servers=``."""
    return kafka_broker.bootstrap


@pytest.fixture
def unique_name(request: pytest.FixtureRequest) -> UniqueName:
    """``unique_name(prefix="t") -> "t-<test name>-<8 hex>"``, valid as a topic or
    group id, different on every call, so tests never see each other's data."""
    test = re.sub(r"[^A-Za-z0-9._-]+", "-", request.node.name).strip("-")[:80]

    def make(prefix: str = "t") -> str:
        return f"{prefix}-{test}-{uuid.uuid4().hex[:8]}"

    return make


@pytest.fixture
async def topic_factory(
    kafka_bootstrap: str, unique_name: UniqueName
) -> AsyncIterator[TopicFactory]:
    """``await topic_factory(partitions=1, name=None, configs=None) -> name``.

    Creates a topic (unique name unless given) with replication factor 1 and
    returns once every partition has a leader. Topics are deleted after the test.
    """
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic
    from aiokafka.errors import for_code

    admin = AIOKafkaAdminClient(bootstrap_servers=kafka_bootstrap, request_timeout_ms=30000)
    await admin.start()
    created: list[str] = []

    async def create(
        partitions: int = 1,
        name: str | None = None,
        configs: dict[str, str] | None = None,
    ) -> str:
        topic = name or unique_name("topic")
        resp: Any = await admin.create_topics(
            [NewTopic(topic, partitions, 1, topic_configs=configs or {})]
        )
        for err_topic, code, *rest in resp.topic_errors:
            if code:
                raise for_code(code)(f"create_topics({err_topic!r}): {rest[0] if rest else ''}")
        created.append(topic)
        await _wait_for_leaders(admin, topic, partitions)
        return topic

    try:
        yield create
    finally:
        try:
            if created:
                await admin.delete_topics(created)
        finally:
            await admin.close()


async def _wait_for_leaders(admin: Any, topic: str, partitions: int, timeout: float = 30) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        described = await admin.describe_topics([topic])
        parts = described[0]["partitions"] if described and not described[0]["error_code"] else []
        if len(parts) == partitions and all(p["leader"] >= 0 for p in parts):
            return
        if loop.time() > deadline:
            raise TimeoutError(f"topic {topic!r} has no leaders after {timeout}s: {described}")
        await asyncio.sleep(0.1)
