"""End to end over a real broker: the product publisher puts the whole real corpus on the
events topic, the Kafka indexer applies it, a worker answers tool calls sent by the host
client — and every reply equals, byte for byte, what the in-process tool service answers
over a store ingested straight from the same files."""

from __future__ import annotations

from pathlib import Path

import pytest

from indexer.query.service import StoreQueryService
from tests.builders import header, user
from tests.fixtures.kafka import KafkaCase
from tests.fixtures.waiting import wait_until
from tests.kafka.harness import (
    Call,
    Topics,
    caught_up,
    create_topics,
    end_offsets,
    ingest_reference,
    publish,
    read_topic,
    reference_reply,
    running_indexer,
    running_stack,
    running_worker,
    stored_offsets,
    wait_assigned,
)
from tests.snapshots import snapshot
from worker.calls.pipeline import Pipeline
from worker.contract.envelopes import Reply
from worker.host.client import SessionqClient

pytestmark = pytest.mark.kafka

ACP = "11111111-1111-4111-8111-111111111111"  # /home/dev/acp-agent, root with descendants
ACP_GRANDCHILD = "a28585dc-ab62-5217-a3ce-b741ad4167c2"
HEADLESS = "95d7567e-2d45-569e-9786-196c6d5ed6bf"  # /home/dev/headless-agent
HEADLESS_OTHER = "dde299fd-4ffb-5ac4-bbde-7d8c0df3400a"
WEB = "8e884627-32e0-57ef-a72e-2078cfa0b12d"  # /home/dev/web/workspace
WEB_BIG = "64633373-26e0-5b92-aa97-7d200928683b"
JSONRPC_CHILD = "0b7fd85c-9f6f-4d46-b954-363984ce66fb"  # /home/dev/jsonrpc-agent
JSONRPC_BASH = "sdk-snapshot-bash"
NO_CWD = "771eb259-54ae-5065-9136-19e6e77f3111"  # a session without a workspace

CALLS = [
    # session_search: several workspaces, filters, and its errors
    Call("session_search", {"query": "subagent"}, ACP, routing_key="/home/dev/acp-agent"),
    Call("session_search", {"query": "notes.txt"}, WEB, routing_key="/home/dev/web/workspace"),
    Call(
        "session_search",
        {
            "query": "subagent",
            "parent_session_ids": ["sdk-snapshot-subagent"],
            "include_root_sessions": True,
        },
        JSONRPC_CHILD,
        routing_key="/home/dev/jsonrpc-agent",
    ),
    Call("session_search", {"query": "bash", "event_types": ["tool/result"]}, HEADLESS),
    Call("session_search", {"query": "hello"}, NO_CWD),  # UNAUTHORIZED: no workspace
    Call("session_search", {"query": "   "}, WEB),  # INVALID_QUERY
    Call("session_search", {}, ACP),  # INVALID_ARGS: missing query
    # session_event_search: own session (explicit and implicit step), workspace peer, foreign
    Call("session_event_search", {"query": "file"}, ACP),
    Call("session_event_search", {"query": "bash"}, JSONRPC_BASH, step_seq=30),
    Call("session_event_search", {"query": "notes", "session_id": WEB_BIG}, WEB),
    Call("session_event_search", {"query": "file", "session_id": HEADLESS}, ACP),  # foreign
    # session_trace
    Call("session_trace", {}, ACP),
    Call("session_trace", {"session_id": ACP_GRANDCHILD}, ACP),
    # session_event_trace
    Call("session_event_trace", {"seq": 10}, WEB),
    Call("session_event_trace", {"seq": 3, "session_id": HEADLESS_OTHER}, HEADLESS),
    # session_event_read: windows, a missing event, a schema violation
    Call("session_event_read", {"seq": 5, "before": 2, "after": 2}, HEADLESS),
    Call("session_event_read", {"seq": 99999}, HEADLESS),  # EVENT_NOT_FOUND
    Call("session_event_read", {"seq": 1.5}, HEADLESS),  # INVALID_ARGS
    # the tool name is checked too
    Call("session_frobnicate", {}, ACP),  # unknown tool
]


@pytest.mark.slow
async def test_whole_corpus_replies_over_kafka_equal_in_process_answers(
    kafka_case: KafkaCase, corpus_dir: Path
) -> None:
    kafka_bootstrap, topic_factory, unique_name, tmp_path = kafka_case.parts()
    topics = Topics(
        kafka_bootstrap,
        events=await topic_factory(partitions=3),
        requests=await topic_factory(partitions=3),
        replies=await topic_factory(partitions=2),
        dlq=await topic_factory(partitions=1),
    )
    kafka = topics.kafka()
    data = tmp_path / "kafka-data"
    reference = tmp_path / "reference"
    ingest_reference(reference, [corpus_dir])

    publisher = await publish(kafka_bootstrap, topics.events, [corpus_dir])
    summary = publisher.summary
    assert summary.sessions == 156 and summary.events == 15048
    assert len(publisher.rejected) == 3  # the three broken logs of the corpus are not published
    ends = await end_offsets(kafka_bootstrap, topics.events)
    assert sum(ends.values()) == summary.records
    assert sum(1 for end in ends.values() if end) >= 2  # workspaces spread over partitions

    async with running_indexer(data, kafka):
        await wait_until(
            lambda: caught_up(data, kafka_bootstrap, topics.events),
            timeout=60,
            what="the indexer to consume the corpus",
            interval=0.2,
        )
    # The Kafka-built store is the ingested store, and it stored the end offsets.
    assert snapshot(data, offsets=False) == snapshot(reference, offsets=False)
    assert stored_offsets(data) == {(topics.events, p): end for p, end in ends.items()}
    assert await read_topic(kafka_bootstrap, topics.dlq) == []

    service = StoreQueryService(reference)
    tools = Pipeline(service)
    codes: list[str | None] = []
    try:
        async with (
            running_worker(data, kafka, unique_name("group")) as worker,
            SessionqClient(kafka) as client,
        ):
            await wait_assigned(worker, 3)
            for n, call in enumerate(CALLS):
                rid = f"e2e-{n}"
                reply = await client.call(
                    call.tool,
                    call.arguments,
                    session_id=call.caller,
                    step_seq=call.step_seq,
                    routing_key=call.routing_key,
                    timeout_ms=30000,
                    request_id=rid,
                )
                expected = await reference_reply(tools, call, rid)
                assert reply.encode() == expected.encode(), call
                codes.append(reply.error.code if reply.error else None)
    finally:
        service.close()

    # The fixed calls cover answers and every kind of error a model can cause.
    assert codes.count(None) >= 10
    assert set(codes) >= {
        None,
        "INVALID_ARGS",
        "SESSION_QUERY_INVALID_QUERY",
        "SESSION_QUERY_TOOL_UNAUTHORIZED",
        "SESSION_QUERY_EVENT_NOT_FOUND",
    }


async def test_lifecycle_and_delete_records_change_what_the_worker_answers(
    kafka_case: KafkaCase,
) -> None:
    kafka_bootstrap, topic_factory, unique_name, tmp_path = kafka_case.parts()
    topics = await create_topics(kafka_bootstrap, topic_factory, events=2, requests=2)
    ws = "/e2e/lifecycle"
    peer = header("peer", cwd=ws)
    gone = header("gone", cwd=ws)
    async with running_stack(topics, tmp_path / "data", unique_name("group")) as stack:
        await stack.publish_session(peer, [user(0, "peer text")])
        await stack.publish_session(gone, [user(0, "a kestrel was here")])
        await stack.indexed()

        async def trace() -> Reply:
            reply: Reply = await stack.client.call(
                "session_trace", {"session_id": "gone"}, session_id="peer", routing_key=ws
            )
            return reply

        assert "Availability: persisted\n" in ((await trace()).text or "")

        await stack.producer.send_json(
            topics.events, {"v": 1, "kind": "lifecycle", "session_id": "gone", "live": True}, key=ws
        )
        await stack.indexed()
        assert "Availability: live, persisted\n" in ((await trace()).text or "")

        await stack.producer.send_json(
            topics.events, {"v": 1, "kind": "delete", "session_id": "gone"}, key=ws
        )
        await stack.indexed()
        reply = await trace()
        assert reply.error is not None and reply.error.code == "SESSION_QUERY_TOOL_UNAUTHORIZED"
        found = await stack.client.call(
            "session_search", {"query": "kestrel"}, session_id="peer", routing_key=ws
        )
        assert found.text == "No prior session matches found.", found
    assert await read_topic(kafka_bootstrap, topics.dlq) == []
