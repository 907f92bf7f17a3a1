"""Partition counts that differ from what was asked or expected are said, not silently
run on: ``topics create --partitions N`` over existing topics of another count warns
in one line naming the count they have and how to change it; a worker warns at start
when its requests and events topics differ; a node warns when the topics' count differs
from the one its stores were built on. Real ``sessionq`` processes, a real broker."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import orjson
import pytest

from tests.fixtures.kafka import TopicFactory, UniqueName
from tests.fixtures.stores import build_store
from tests.fixtures.waiting import wait_until
from tests.kafka.harness import create_topics, product_topics
from tests.kafka.processes import PYTHON, REPO_ROOT, CliProcess

pytestmark = pytest.mark.kafka


async def test_topics_create_over_topics_of_another_count_warns_in_one_line(
    kafka_bootstrap: str, unique_name: UniqueName
) -> None:
    async with product_topics(kafka_bootstrap, unique_name("sq"), partitions=1) as (topics, _):
        done = subprocess.run(
            [PYTHON, "-m", "worker", "topics", "create", "--bootstrap", kafka_bootstrap,
             "--partitions", "2"],
            cwd=REPO_ROOT, env={**os.environ, **topics.env()}, capture_output=True, text=True,
            timeout=120, check=False,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert sorted(done.stdout.splitlines()) == sorted(f"{n}: exists" for n in topics.names())
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    warning = lines[0]
    assert warning.startswith("sessionq topics create: warning: "), warning
    keyed = [topics.events, topics.requests, topics.replies, topics.lineage]
    for name in keyed:
        assert name in warning, warning
    assert topics.dlq not in warning  # one partition by design, whatever --partitions says
    assert "1 partition" in warning and "not 2" in warning, warning
    assert "kafka-topics.sh" in warning and "--alter" in warning, warning
    assert "--partitions 2" in warning, warning


async def test_a_worker_warns_at_start_when_requests_and_events_differ(
    kafka_bootstrap: str, topic_factory: TopicFactory, unique_name: UniqueName, tmp_path: Path
) -> None:
    topics = await create_topics(kafka_bootstrap, topic_factory, events=1, requests=2)
    data = tmp_path / "data"
    build_store(data, [])
    worker = CliProcess(
        ["worker", "--data", str(data), "--insecure-unauthenticated-callers",
         "--group", unique_name("g"), "--metrics-listen", ""],
        tmp_path / "worker.log", env={**topics.env(), "SESSIONQ_BOOTSTRAP": kafka_bootstrap},
    ).start()  # fmt: skip
    try:
        await wait_until(
            lambda: "assigned partitions" in worker.log() or not worker.alive(),
            timeout=120, what="the worker to join its group",
        )  # fmt: skip
    finally:
        worker.stop()
    warned = [line for line in worker.log().splitlines() if " WARNING " in line and
              topics.requests in line]  # fmt: skip
    assert len(warned) == 1, worker.log()[-3000:]
    assert "2 partitions" in warned[0] and topics.events in warned[0], warned
    assert "1" in warned[0].split(topics.events, 1)[1], warned


async def test_a_node_warns_when_its_stores_were_built_on_another_count(
    kafka_bootstrap: str, unique_name: UniqueName, tmp_path: Path
) -> None:
    async with product_topics(kafka_bootstrap, unique_name("sq"), partitions=2) as (topics, _):
        data = tmp_path / "node"
        data.mkdir()
        previous = {"partitions": 3, "owned": [0, 1, 2], "ready": [], "standby": []}
        (data / "node.json").write_bytes(orjson.dumps({**previous, "updated_at": 0}))
        node = CliProcess(
            ["node", "--data", str(data), "--insecure-unauthenticated-callers",
             "--group", unique_name("g"), "--metrics-listen", ""],
            tmp_path / "node.log", env={**topics.env(), "SESSIONQ_BOOTSTRAP": kafka_bootstrap},
        ).start()  # fmt: skip
        try:
            await wait_until(
                lambda: "node joined group" in node.log() or not node.alive(),
                timeout=120, what="the node to join its group",
            )  # fmt: skip
        finally:
            node.stop()
    warned = [line for line in node.log().splitlines() if " WARNING " in line and
              "partitions" in line]  # fmt: skip
    assert len(warned) == 1, node.log()[-3000:]
    assert "3" in warned[0] and "2" in warned[0] and topics.events in warned[0], warned
