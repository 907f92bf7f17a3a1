"""``sessionq topics create`` / ``ensure_topics`` against a real broker: the four topics
with their partition counts and configs, created once (idempotent)."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import pytest
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

from tests.fixtures.kafka import UniqueName
from tests.kafka.harness import (
    Topics,
    end_offsets,
    product_topics,
)
from tests.kafka.processes import (
    PYTHON,
    REPO_ROOT,
)
from worker.contract.envelopes import MAX_REQUEST_BYTES
from worker.host.topics import ensure_topics

pytestmark = pytest.mark.kafka


async def topic_configs(bootstrap: str, topic: str) -> dict[str, str]:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        responses: Any = await admin.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, topic)]
        )
    finally:
        await admin.close()
    out: dict[str, str] = {}
    for response in responses:
        for _code, _msg, _type, _name, entries in response.resources:
            for entry in entries:
                out[entry[0]] = entry[1]
    return out


async def test_topics_are_created_with_their_partitions_and_configs_once(
    kafka_bootstrap: str, unique_name: UniqueName
) -> None:
    async with product_topics(kafka_bootstrap, unique_name("sq"), partitions=3) as (
        topics,
        created,
    ):
        names = topics.names()
        assert topics.lineage is not None
        assert created == dict.fromkeys(names, "created")
        partitions = {n: len(await end_offsets(kafka_bootstrap, n)) for n in names}
        assert partitions == {
            topics.events: 3,
            topics.requests: 3,  # co-partitioned with the events (partitioned nodes)
            topics.replies: 3,
            topics.dlq: 1,
            topics.lineage: 3,
        }
        lineage = await topic_configs(kafka_bootstrap, topics.lineage)
        assert lineage["cleanup.policy"] == "compact"  # a tombstone erases a session's entry
        day = 24 * 3600 * 1000
        events = await topic_configs(kafka_bootstrap, topics.events)
        assert events["retention.ms"] == str(30 * day)  # finite: erased data leaves Kafka
        assert events["segment.ms"] == str(day)  # segments roll daily, so it leaves on time
        assert events["retention.bytes"] == "-1"
        assert events["max.message.bytes"] == "8388608"
        requests = await topic_configs(kafka_bootstrap, topics.requests)
        assert requests["max.message.bytes"] == str(MAX_REQUEST_BYTES)  # issue 10: 1 MiB
        for name in (topics.requests, topics.replies):
            assert (await topic_configs(kafka_bootstrap, name))["retention.ms"] == str(day)
        assert (await topic_configs(kafka_bootstrap, topics.dlq))["retention.ms"] == str(30 * day)

        # Again, from the API and from the CLI: nothing changes.
        assert await ensure_topics(topics.kafka(), 3) == dict.fromkeys(names, "exists")
        out = await cli_topics_create(kafka_bootstrap, topics)
        assert sorted(out.splitlines()) == sorted(f"{n}: exists" for n in names)


async def cli_topics_create(bootstrap: str, topics: Topics) -> str:
    proc = await asyncio.create_subprocess_exec(
        PYTHON,
        "-m",
        "worker",
        "topics",
        "create",
        "--bootstrap",
        bootstrap,
        "--partitions",
        "3",
        cwd=REPO_ROOT,
        env={**os.environ, **topics.env()},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, stderr.decode()
    return stdout.decode()
