"""Partitioned nodes losing a member under a steady request load, on a real broker: a
``kill -9``ed node's partitions are answered again by the node holding their standby
copies within seconds, or by a node that restores their newest snapshots and catches
up; every acknowledged request gets its one answer (the host drops duplicates by id);
a node that joins later takes partitions over through their snapshots."""

from __future__ import annotations

import asyncio
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from indexer.kafka.node_group import partition_for
from tests.builders import header, user
from tests.fixtures.kafka import UniqueName
from tests.fixtures.waiting import wait_until
from tests.kafka.harness import Topics, product_topics
from tests.kafka.nodes import NodeProc, covered, spawn_node, workspaces_on_distinct_partitions
from tests.kafka.processes import Processes
from tests.kafka.records import RawProducer, ReplyTap, events_record, header_record
from worker.contract.envelopes import Reply
from worker.host.client import SessionqClient

pytestmark = [pytest.mark.kafka, pytest.mark.slow]
PARTITIONS = 6
STANDBY_FAILOVER_S = 10.0  # the bound with a standby copy
LOAD_INTERVAL_S = 0.1


@dataclass
class Load:
    """Requests sent at a steady rate, one caller per partition, and what came back."""

    client: SessionqClient
    callers: dict[str, str]  # caller id -> workspace key
    sent: list[tuple[float, str, int, str]] = field(default_factory=list)  # t, id, p, caller
    replies: dict[str, tuple[float, Reply]] = field(default_factory=dict)
    tasks: list[asyncio.Task[None]] = field(default_factory=list)

    async def _one(self, rid: str, caller: str, key: str) -> None:
        reply = await self.client.call(
            "session_search",
            {"query": "kestrel"},
            session_id=caller,
            routing_key=key,
            timeout_ms=40000,
            request_id=rid,
        )
        assert rid not in self.replies  # one answer per call
        self.replies[rid] = (time.monotonic(), reply)

    async def run(self, seconds: float) -> None:
        order = sorted(self.callers.items())
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            caller, key = order[len(self.sent) % len(order)]
            rid = f"load-{len(self.sent)}"
            p = partition_for(key.encode(), PARTITIONS)
            self.sent.append((time.monotonic(), rid, p, caller))
            self.tasks.append(asyncio.create_task(self._one(rid, caller, key)))
            await asyncio.sleep(LOAD_INTERVAL_S)

    async def finish(self) -> None:
        await asyncio.gather(*self.tasks)

    def first_answer_after(self, t0: float, partition: int) -> float:
        """Seconds from ``t0`` to the first good reply received after it for ``partition``."""
        partition_of = {rid: p for _, rid, p, _ in self.sent}
        times = [
            t
            for rid, (t, reply) in self.replies.items()
            if partition_of[rid] == partition and t > t0 and reply.error is None
        ]
        return min(times) - t0


async def publish_callers(bootstrap: str, topics: Topics) -> dict[str, str]:
    """One caller per partition, with a peer in its workspace that its search finds."""
    callers = {}
    async with RawProducer(bootstrap) as producer:
        for i, ws in enumerate(workspaces_on_distinct_partitions(PARTITIONS, PARTITIONS)):
            for sid in (f"caller-{i}", f"peer-{i}"):
                await producer.send_json(topics.events, header_record(header(sid, cwd=ws)), key=ws)
                await producer.send_json(
                    topics.events, events_record(sid, [user(0, f"kestrel of {sid}")]), key=ws
                )
            callers[f"caller-{i}"] = ws
    return callers


def owner_of_most(nodes: list[NodeProc]) -> NodeProc:
    return max(nodes, key=lambda n: (len(n.ready()), str(n.data)))


async def assert_every_request_answered_once(
    load: Load, tap: ReplyTap, expected: dict[str, str]
) -> None:
    await load.finish()
    ids = [rid for _, rid, _, _ in load.sent]
    assert set(load.replies) == set(ids)
    for _, rid, _, caller in load.sent:
        reply = load.replies[rid][1]
        assert reply.error is None, (rid, reply)
        assert reply.text == expected[caller], rid
    await tap.wait_for(ids, timeout=60)  # on the reply topic too (duplicates allowed there)


async def expected_texts(client: SessionqClient, callers: dict[str, str]) -> dict[str, str]:
    out = {}
    for caller, key in callers.items():
        reply = await client.call(
            "session_search",
            {"query": "kestrel"},
            session_id=caller,
            routing_key=key,
            timeout_ms=30000,
        )
        assert reply.error is None and reply.text is not None, reply
        assert "kestrel of peer-" in reply.text, reply.text
        out[caller] = reply.text
    return out


async def test_a_killed_node_s_partitions_are_answered_by_their_standby_within_seconds(
    kafka_bootstrap: str, unique_name: UniqueName, tmp_path: Path
) -> None:
    async with product_topics(kafka_bootstrap, unique_name("fo"), PARTITIONS) as (topics, _):
        callers = await publish_callers(kafka_bootstrap, topics)
        procs = Processes(tmp_path, topics)
        group = unique_name("group")
        try:
            nodes = [
                spawn_node(
                    procs, topics, group, tmp_path / f"n{i}", f"n{i}", "--standby-replicas", "1"
                )
                for i in range(3)
            ]
            await wait_until(
                lambda: (
                    covered(nodes, PARTITIONS)
                    and all(n.ready() for n in nodes)
                    and set().union(*(n.standby() for n in nodes)) == set(range(PARTITIONS))
                ),
                timeout=240,
                what="three nodes with a standby copy of every partition",
                interval=0.5,
            )
            async with (
                SessionqClient(topics.kafka()) as client,
                ReplyTap(kafka_bootstrap, topics.replies) as tap,
            ):
                expected = await expected_texts(client, callers)
                load = Load(client, callers)
                running = asyncio.create_task(load.run(25.0))
                await asyncio.sleep(4.0)  # the load runs before, during and after the kill
                victim = owner_of_most(nodes)
                lost = sorted(victim.ready())
                t0 = time.monotonic()
                victim.proc.kill(signal.SIGKILL)
                await running
                await assert_every_request_answered_once(load, tap, expected)
                failover = {p: load.first_answer_after(t0, p) for p in lost}
                print(f"standby failover of partitions {lost}: {failover}")
                assert max(failover.values()) < STANDBY_FAILOVER_S, failover
        finally:
            procs.stop_all()


def complete_snapshots(root: Path, partition: int) -> int:
    folder = root / f"p{partition}"
    if not folder.is_dir():
        return 0
    return sum(1 for s in folder.iterdir() if (s / "manifest.json").exists())


async def test_without_standby_partitions_come_back_through_snapshots_and_a_new_node_restores(
    kafka_bootstrap: str, unique_name: UniqueName, tmp_path: Path
) -> None:
    snapshots = tmp_path / "snapshots"
    flags = ("--snapshot-to", str(snapshots), "--snapshot-from", str(snapshots))
    flags += ("--snapshot-every", "1s")
    async with product_topics(kafka_bootstrap, unique_name("snap"), PARTITIONS) as (topics, _):
        callers = await publish_callers(kafka_bootstrap, topics)
        procs = Processes(tmp_path, topics)
        group = unique_name("group")
        try:
            nodes = [
                spawn_node(procs, topics, group, tmp_path / f"n{i}", f"n{i}", *flags)
                for i in range(3)
            ]
            await wait_until(
                lambda: (
                    covered(nodes, PARTITIONS)
                    and all(n.ready() for n in nodes)
                    and all(complete_snapshots(snapshots, p) for p in range(PARTITIONS))
                ),
                timeout=240,
                what="three nodes sharing the partitions, a snapshot of each published",
                interval=0.5,
            )
            async with (
                SessionqClient(topics.kafka()) as client,
                ReplyTap(kafka_bootstrap, topics.replies) as tap,
            ):
                expected = await expected_texts(client, callers)
                load = Load(client, callers)
                running = asyncio.create_task(load.run(20.0))
                await asyncio.sleep(3.0)
                victim = owner_of_most(nodes)
                lost = sorted(victim.ready())
                t0 = time.monotonic()
                victim.proc.kill(signal.SIGKILL)
                await running
                await assert_every_request_answered_once(load, tap, expected)
                failover = {p: load.first_answer_after(t0, p) for p in lost}
                print(f"snapshot failover of partitions {lost}: {failover}")

                # A fourth node with an empty data dir takes partitions over through
                # their snapshots, then answers them.
                alive = [n for n in nodes if n is not victim]
                fourth = spawn_node(procs, topics, group, tmp_path / "n4", "n4", *flags)
                await wait_until(
                    lambda: covered([*alive, fourth], PARTITIONS) and bool(fourth.ready()),
                    timeout=240,
                    what="the fourth node to take partitions over",
                    interval=0.5,
                )
                log = fourth.proc.log()
                for p in fourth.ready():
                    assert f"partition {p}: restored " in log, log
                got = await expected_texts(client, callers)
                assert got == expected
        finally:
            procs.stop_all()
