"""Two ``sessionq worker`` processes in one consumer group over one data dir: both serve
(the group splits the request partitions between them), and when one is SIGKILLed under
load the other takes its partitions over and every request still gets its reply
(at-least-once: duplicates are possible, the client drops them by id)."""

from __future__ import annotations

import asyncio
import itertools
import signal
from pathlib import Path

import pytest

from indexer.query.service import StoreQueryService
from tests.fixtures.kafka import KafkaCase
from tests.fixtures.waiting import wait_until
from tests.kafka.harness import (
    Call,
    committed_offsets,
    create_topics,
    end_offsets,
    ingest_reference,
    keys_per_partition,
    reference_reply,
)
from tests.kafka.processes import (
    CliProcess,
    Processes,
    assigned_partitions,
)
from tests.kafka.records import ReplyTap
from worker.calls.pipeline import Pipeline
from worker.contract.envelopes import Reply
from worker.host.client import SessionqClient

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

PARTITIONS = 4
ACP = "11111111-1111-4111-8111-111111111111"
HEADLESS = "95d7567e-2d45-569e-9786-196c6d5ed6bf"
WEB = "8e884627-32e0-57ef-a72e-2078cfa0b12d"
CALLS = [
    Call("session_event_read", {"seq": 5, "before": 2, "after": 2}, HEADLESS),
    Call("session_trace", {}, ACP),
    Call("session_search", {"query": "notes.txt"}, WEB),
    Call("session_event_search", {"query": "file"}, ACP),
    Call("session_event_trace", {"seq": 10}, WEB),
    Call("session_event_read", {"seq": 99999}, HEADLESS),
]


def assignments(*workers: CliProcess) -> list[list[int] | None]:
    return [assigned_partitions(w.log()) for w in workers]


def split_between(a: CliProcess, b: CliProcess) -> bool:
    """Both members own partitions, and together exactly all of them."""
    pa, pb = assignments(a, b)
    return bool(pa) and bool(pb) and sorted([*(pa or []), *(pb or [])]) == list(range(PARTITIONS))


async def test_two_worker_processes_share_the_load_and_survive_a_sigkill(
    kafka_case: KafkaCase, corpus_dir: Path
) -> None:
    kafka_bootstrap, topic_factory, unique_name, tmp_path = kafka_case.parts()
    topics = await create_topics(
        kafka_bootstrap, topic_factory, events=1, requests=PARTITIONS, replies=2
    )
    group = unique_name("group")
    data = tmp_path / "data"
    ingest_reference(data, [corpus_dir])
    service = StoreQueryService(data)
    tools = Pipeline(service)
    keys = keys_per_partition(PARTITIONS)  # routing key -> a known request partition
    procs = Processes(tmp_path, topics)
    args = (
        "worker",
        "--bootstrap",
        kafka_bootstrap,
        "--data",
        str(data),
        "--group",
        group,
        "--insecure-unauthenticated-callers",
    )
    counter = itertools.count()

    async def call(client: SessionqClient, n: int) -> tuple[str, Reply]:
        """Call number ``n`` (spec and partition chosen round-robin); checks the reply."""
        spec = CALLS[n % len(CALLS)]
        rid = f"req-{next(counter)}"
        reply = await client.call(
            spec.tool,
            spec.arguments,
            session_id=spec.caller,
            routing_key=keys[n % PARTITIONS],
            timeout_ms=45000,
            request_id=rid,
        )
        expected = await reference_reply(tools, spec, rid)
        assert reply.encode() == expected.encode(), (spec, reply)
        return rid, reply

    try:
        first = procs.spawn("worker-a", *args)
        await wait_until(
            lambda: assignments(first) == [list(range(PARTITIONS))],
            timeout=60,
            what="worker A to own every partition",
            interval=0.1,
        )
        second = procs.spawn("worker-b", *args)
        await wait_until(
            lambda: split_between(first, second),
            timeout=60,
            what="the group to split the partitions between A and B",
            interval=0.1,
        )
        owned_by_a, owned_by_b = assignments(first, second)
        assert owned_by_a and owned_by_b

        async with (
            SessionqClient(topics.kafka()) as client,
            ReplyTap(kafka_bootstrap, topics.replies) as tap,
        ):
            # Wave 1: both processes serve; each partition is answered and committed by
            # its owner, so A's and B's partitions all move forward.
            await asyncio.gather(*(call(client, n) for n in range(3 * PARTITIONS)))
            ends = await end_offsets(kafka_bootstrap, topics.requests)
            assert all(ends[p] >= 3 for p in range(PARTITIONS)), ends
            await wait_until(
                lambda: _committed_to(kafka_bootstrap, group, topics.requests, ends),
                timeout=30,
                what="both members to commit their partitions",
                interval=0.2,
            )
            assert assignments(first, second) == [owned_by_a, owned_by_b]  # no rebalance

            # Wave 2: a steady load; A is SIGKILLed once a third of it is answered.
            total, in_flight = 60, asyncio.Semaphore(8)
            answered: list[str] = []

            async def paced(n: int) -> tuple[str, Reply]:
                async with in_flight:
                    rid, reply = await call(client, n)
                answered.append(rid)
                return rid, reply

            load = asyncio.gather(*(paced(n) for n in range(total)))
            await wait_until(
                lambda: len(answered) >= total // 3 or load.done(),
                timeout=60,
                what="a third of the load to be answered",
            )
            assert not load.done()
            assert first.kill(signal.SIGKILL) == -signal.SIGKILL
            results = await asyncio.wait_for(load, 90)
            assert len({rid for rid, _ in results}) == total

            # B took over every partition, and the reply topic holds a reply for every
            # request; duplicates (redelivered after the kill) are identical.
            assert assignments(second) == [list(range(PARTITIONS))]
            replies = await tap.wait_for([rid for rid, _ in results], timeout=30)
            for rid, reply in results:
                assert replies[rid].encode() == reply.encode()
            for rid, copies in tap.by_id().items():
                assert all(c.encode() == copies[0].encode() for c in copies), rid
            assert tap.unreadable == []
    finally:
        procs.stop_all()
        service.close()


async def _committed_to(bootstrap: str, group: str, topic: str, ends: dict[int, int]) -> bool:
    committed = await committed_offsets(bootstrap, group, topic)
    return all(committed.get(p, -1) >= end for p, end in ends.items())
