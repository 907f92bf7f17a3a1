"""Partitioned nodes (``sessionq node``) on a real broker: three nodes on six partitions
hold only their partitions' sessions and answer the five tools like a full replica (the
existing ``indexer`` over every partition): byte for byte, lineage that crosses
workspaces included, but for the order of search hits of close relevance (BM25 uses the
partition's statistics); deletes find their partition through the lineage; misrouted
requests and unequal partition counts are refused at once."""

from __future__ import annotations

import asyncio
import os
import re
import sqlite3
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import orjson
import pytest

from indexer.kafka.node_group import partition_for
from indexer.model import SessionHeader
from indexer.query.service import StoreQueryService
from indexer.settings import KafkaSettings
from tests.builders import header, user
from tests.fixtures.kafka import TopicFactory, UniqueName
from tests.fixtures.waiting import wait_until
from tests.kafka.harness import (
    Topics,
    caught_up,
    create_topics,
    product_topics,
    publish,
    reference_reply,
    running_indexer,
)
from tests.kafka.nodes import (
    X_CHILD,
    X_GAMMA,
    X_ROOT,
    NodeProc,
    calls_for,
    covered,
    cross_sessions,
    partition_sessions,
    publish_cross_sessions,
    spawn_node,
    store_headers,
    workspaces_on_distinct_partitions,
)
from tests.kafka.processes import REPO_ROOT, Processes
from tests.kafka.records import (
    RawProducer,
    ReplyTap,
    events_record,
    header_record,
    request_record,
)
from worker.calls.pipeline import Pipeline
from worker.contract.envelopes import Reply
from worker.host.client import SessionqClient

pytestmark = pytest.mark.kafka
PARTITIONS = 6
HIDDEN = "[outside workspace subtree]"


def lineage_count(node_dir: Path) -> int:
    path = node_dir / "lineage.sqlite3"
    if not path.exists():
        return 0
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    try:
        return int(conn.execute("SELECT count(*) FROM lineage").fetchone()[0])
    except sqlite3.OperationalError:
        return 0
    finally:
        conn.close()


@pytest.mark.slow
async def test_three_nodes_hold_their_partitions_and_answer_like_a_full_replica(
    kafka_bootstrap: str, unique_name: UniqueName, corpus_dir: Path, tmp_path: Path
) -> None:
    async with product_topics(kafka_bootstrap, unique_name("nodes"), PARTITIONS) as (topics, _):
        kafka = topics.kafka()
        await publish(kafka_bootstrap, topics.events, [corpus_dir])
        alpha, beta, gamma = workspaces_on_distinct_partitions(PARTITIONS, 3)
        async with RawProducer(kafka_bootstrap) as producer:
            await publish_cross_sessions(
                producer, topics.events, cross_sessions(alpha, beta, gamma)
            )
        full = tmp_path / "full"
        async with running_indexer(full, kafka):
            await wait_until(
                lambda: caught_up(full, kafka_bootstrap, topics.events),
                timeout=120,
                what="the full replica to consume the corpus",
            )
        headers = store_headers(full)
        procs = Processes(tmp_path, topics)
        group = unique_name("group")
        try:
            nodes = [
                spawn_node(procs, topics, group, tmp_path / f"node{i}", f"node{i}")
                for i in range(3)
            ]
            await wait_until(
                lambda: (
                    covered(nodes, PARTITIONS)
                    and all(n.ready() for n in nodes)  # each node owns some partitions
                    and all(lineage_count(n.data) == len(headers) for n in nodes)
                ),
                timeout=240,
                what="three nodes to share every partition and know the whole lineage",
                interval=0.5,
            )
            assert_nodes_hold_their_partitions(nodes, {h.id: h.routing_key for h in headers})
            await assert_stats_and_metrics_show_the_owned_partitions(nodes[0])
            await assert_answers_equal_the_full_replica(kafka, full, headers, (alpha, beta, gamma))
            await assert_misrouted_request_is_refused_at_once(topics.bootstrap, topics, alpha)
            await assert_delete_finds_the_partition(nodes, topics, beta, gamma)
        finally:
            procs.stop_all()


SEARCHES = ("session_search", "session_event_search")


def comparable(reply: Reply) -> object:
    """A search reply up to the order of its hits: BM25 weighs terms by the statistics
    of the index it runs on, a partition's own on a node (README "Partitioned nodes"),
    so hits of close relevance may swap places; the hits themselves are the same."""
    if reply.text is None:
        return reply.encode()
    head, *blocks = reply.text.split("\n\n")
    return head, sorted(re.sub(r"^\d+\. ", "", b) for b in blocks)


async def assert_stats_and_metrics_show_the_owned_partitions(node: NodeProc) -> None:
    """``sessionq stats --data <node dir> --json`` counts the sessions of the partitions
    the node owns now; ``/metrics`` has each one's readiness, lag and store size."""
    ready = sorted(node.ready())
    out = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "worker", "stats", "--data", str(node.data), "--json"],
        cwd=REPO_ROOT,
        capture_output=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    stats = orjson.loads(out.stdout)
    held = sum(len(partition_sessions(node.data / "partitions" / str(p))) for p in ready)
    assert stats["owned"] == ready and stats["sessions"] == held > 0
    assert stats["standby"]["partitions"] == [] and stats["standby"]["sessions"] == 0
    port = re.findall(r"metrics on [\d.]+:(\d+)", node.proc.log())[-1]

    def scrape() -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
            return str(r.read().decode())

    def shows_partitions() -> bool:
        text = scrape()
        return all(f'sessionq_node_partition_ready{{partition="{p}"}} 1.0' in text for p in ready)

    await wait_until(
        lambda: asyncio.to_thread(shows_partitions), timeout=60, what="per-partition metrics"
    )
    text = scrape()
    for p in ready:
        assert f'sessionq_node_partition_lag{{partition="{p}",role="active"}} 0.0' in text
        size = re.search(
            rf'sessionq_node_partition_store_bytes{{partition="{p}",role="active"}} (\S+)', text
        )
        assert size is not None and float(size.group(1)) > 0


def assert_nodes_hold_their_partitions(nodes: list[NodeProc], keys: dict[str, str]) -> None:
    """The store of each owned partition holds exactly the sessions routed to it, and
    the owned stores together hold every session once."""
    seen: dict[str, int] = {}
    for node in nodes:
        for p in node.ready():
            held = partition_sessions(node.data / "partitions" / str(p))
            assert {partition_for(k.encode(), PARTITIONS) for k in held.values()} <= {p}
            for sid in held:
                assert sid not in seen
                seen[sid] = p
    assert set(seen) == set(keys)


async def assert_answers_equal_the_full_replica(
    kafka: KafkaSettings, full: Path, headers: list[SessionHeader], cross: tuple[str, str, str]
) -> None:
    callers: dict[str, str] = {}
    for h in sorted(headers, key=lambda h: h.id):
        if h.cwd is not None and h.cwd not in callers.values():
            callers[h.id] = h.cwd
    callers.update({X_ROOT: cross[0], X_CHILD: cross[1], X_GAMMA: cross[2]})
    homes = {partition_for(k.encode(), PARTITIONS) for k in callers.values()}
    assert len(homes) >= 4  # callers in several workspaces over several partitions
    service = StoreQueryService(full)
    tools = Pipeline(service)
    texts: dict[tuple[str, str], str] = {}
    try:
        async with SessionqClient(kafka) as client:
            for n, call in enumerate(calls_for(callers)):
                rid = f"nodes-{n}"
                reply = await client.call(
                    call.tool,
                    call.arguments,
                    session_id=call.caller,
                    routing_key=call.routing_key,
                    timeout_ms=30000,
                    request_id=rid,
                )
                expected = await reference_reply(tools, call, rid)
                if call.tool in SEARCHES:
                    assert comparable(reply) == comparable(expected), call
                else:
                    assert reply.encode() == expected.encode(), call
                texts[(call.tool, call.caller)] = reply.text or ""
    finally:
        service.close()
    # The lineage that crosses partitions is there, rendered as a full replica does.
    assert HIDDEN in texts[("session_trace", X_ROOT)]
    assert HIDDEN in texts[("session_trace", X_CHILD)]
    assert "x-sibling" in texts[("session_trace", X_ROOT)]


async def assert_misrouted_request_is_refused_at_once(
    bootstrap: str, topics: Topics, workspace: str
) -> None:
    home = partition_for(workspace.encode(), PARTITIONS)
    wrong = (home + 1) % PARTITIONS
    record = request_record(
        "misrouted-1", topics.replies, "session_trace", {}, session_id=X_ROOT, timeout_ms=60000
    )
    async with ReplyTap(bootstrap, topics.replies) as tap, RawProducer(bootstrap) as producer:
        await producer.send_json(topics.requests, record, key=workspace, partition=wrong)
        replies = await tap.wait_for(["misrouted-1"], timeout=30)  # far below its deadline
    error = replies["misrouted-1"].error
    assert error is not None and error.code == "SESSION_QUERY_MISROUTED", replies
    assert f"routes to partition {home} of {PARTITIONS}" in error.message


async def assert_delete_finds_the_partition(
    nodes: list[NodeProc], topics: Topics, beta: str, gamma: str
) -> None:
    """``sessionq delete ID --data <a node's dir>`` keys the delete by the session's
    workspace found in the lineage; its owner applies it and every node's lineage forgets
    it (each node reads the lineage topic at its own pace, and the trace below is answered
    by whichever node owns ``beta``'s partition)."""
    node = nodes[0]
    out = await asyncio.to_thread(
        subprocess.run,
        [
            sys.executable,
            "-m",
            "worker",
            "delete",
            X_GAMMA,
            "--bootstrap",
            topics.bootstrap,
            "--data",
            str(node.data),
        ],
        cwd=REPO_ROOT,
        env={**os.environ, **topics.env()},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    home = partition_for(gamma.encode(), PARTITIONS)
    assert f"partition {home}," in out.stdout, out.stdout
    await wait_until(
        lambda: not any(lineage_has(n.data, X_GAMMA) for n in nodes),
        timeout=60,
        what="the delete to reach every node's lineage",
    )
    async with SessionqClient(topics.kafka()) as client:
        reply = await client.call("session_trace", {}, session_id=X_CHILD, routing_key=beta)
    assert reply.text is not None
    assert reply.text.count(HIDDEN) == 1, reply.text  # x-grandchild stays, x-gamma is gone


def lineage_has(node_dir: Path, session_id: str) -> bool:
    conn = sqlite3.connect(f"file:{node_dir / 'lineage.sqlite3'}?mode=ro", uri=True, timeout=30)
    try:
        row = conn.execute("SELECT 1 FROM lineage WHERE id = ?", (session_id,)).fetchone()
    finally:
        conn.close()
    return row is not None


async def test_a_node_refuses_unequal_partition_counts_in_one_line(
    kafka_bootstrap: str, topic_factory: TopicFactory, unique_name: UniqueName, tmp_path: Path
) -> None:
    topics = await create_topics(kafka_bootstrap, topic_factory, events=2, requests=3)
    lineage = await topic_factory(partitions=1)
    from dataclasses import replace

    topics = replace(topics, lineage=lineage)
    procs = Processes(tmp_path, topics)
    try:
        node = spawn_node(procs, topics, unique_name("group"), tmp_path / "node", "node")
        assert node.proc.proc is not None
        code = await asyncio.to_thread(node.proc.proc.wait, 120)
        assert code == 2
        lines = [line for line in node.proc.log().splitlines() if line.startswith("sessionq node:")]
        assert len(lines) == 1 and "has 2 partitions" in lines[0] and "needs them equal" in lines[0]
    finally:
        procs.stop_all()


async def test_retention_runs_per_partition_on_its_owner(
    kafka_bootstrap: str, unique_name: UniqueName, tmp_path: Path
) -> None:
    """``--retain-days`` on a node: the owner of each partition publishes the delete
    records of its expired sessions; they are applied there and leave the lineage."""
    async with product_topics(kafka_bootstrap, unique_name("ret"), 2) as (topics, _):
        now_ms = int(time.time() * 1000)
        async with RawProducer(kafka_bootstrap) as producer:
            for sid, at in (("old", 1_000), ("fresh", now_ms)):
                h = header(sid, cwd="/ret/a", created_at=at)
                await producer.send_json(topics.events, header_record(h), key="/ret/a")
                events = events_record(sid, [user(0, "kestrel", time=at)])
                await producer.send_json(topics.events, events, key="/ret/a")
        procs = Processes(tmp_path, topics)
        try:
            node = spawn_node(
                procs,
                topics,
                unique_name("group"),
                tmp_path / "node",
                "node",
                "--retain-days",
                "1",
                env={"SESSIONQ_RETENTION_CHECK_MS": "500"},
            )
            home = partition_for(b"/ret/a", 2)
            store = node.data / "partitions" / str(home)
            await wait_until(
                lambda: (
                    covered([node], 2)
                    and lineage_has(node.data, "fresh")
                    and not lineage_has(node.data, "old")
                    and set(partition_sessions(store)) == {"fresh"}
                ),
                timeout=120,
                what="the expired session to be deleted on its partition",
                interval=0.5,
            )
        finally:
            procs.stop_all()


async def test_pausing_or_seeking_a_partition_the_member_lost_is_a_no_op(
    kafka_bootstrap: str, unique_name: UniqueName
) -> None:
    """Between a rebalance's revocation and its assignment the node's view still lists
    its old partitions; pausing, resuming or seeking them then must not raise (it
    stopped a node under a request flood)."""
    from indexer.kafka.assignor import LocalState
    from indexer.kafka.node_group import NodeGroup

    async with product_topics(kafka_bootstrap, unique_name("lost"), 2) as (topics, _):
        group = NodeGroup(
            topics.kafka(),
            unique_name("group"),
            standby_replicas=0,
            local=LocalState,
            session_timeout_ms=6000,
        )
        await group.connect()
        try:
            assert group.assignment() == []
            group.pause(topics.requests, [0, 1])
            group.resume(topics.requests, [0, 1])
            await group.seek_events(0, 5)
        finally:
            await group.stop()
