"""``sessionq mcp`` with the Kafka backend against a real broker and worker: a foreign
workspace target is refused over MCP with exactly the text the host client gets over
Kafka (and the embedded MCP server, and ``sessionq call``); answers are the same too."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from tests.fixtures.mcp import CALLER, CASES, FOREIGN, CliReply
from tests.kafka.harness import create_topics, running_worker, wait_assigned
from tests.mcp.inprocess import embedded, mcp_client, window
from tests.mcp.test_transports import as_reply
from worker.authn.keyring import keyring_entry
from worker.authn.tokens import CallerSigner, generate_key_pair
from worker.calls.limits import ToolLimits
from worker.host.client import call_once
from worker.transports.mcp.backends import KafkaBackend
from worker.transports.mcp.binding import CallerBinder

pytestmark = pytest.mark.kafka

FOREIGN_CALL = {"session_id": FOREIGN}


async def test_a_foreign_target_is_refused_over_mcp_exactly_as_over_kafka(
    corpus_data: Path,
    cli_replies: dict[str, CliReply],
    kafka_bootstrap: str,
    topic_factory: Callable[..., Awaitable[str]],
    unique_name: Callable[[str], str],
) -> None:
    topics = await create_topics(kafka_bootstrap, topic_factory, events=1, requests=2)
    kafka = topics.kafka()
    search = next(c for c in CASES if c.name == "search")
    async with running_worker(corpus_data, kafka, unique_name("mcp")) as worker:
        await wait_assigned(worker, 2)
        reply = await call_once(
            kafka, "session_trace", FOREIGN_CALL, session_id=CALLER, timeout_ms=60_000
        )
        assert not reply.ok and reply.error is not None
        over_kafka = CliReply(False, f"{reply.error.code}: {reply.error.message}")
        backend = KafkaBackend(kafka, ToolLimits(), data=corpus_data)
        async with mcp_client(backend, window(CALLER)) as client:
            mcp_kafka = as_reply(await client.call_tool("session_trace", FOREIGN_CALL))
            mcp_search = as_reply(await client.call_tool(search.tool, search.arguments))
        # Discovery over a replica's data dir, answered through Kafka.
        workspace = window(cwd="/home/dev/acp-agent")
        async with mcp_client(KafkaBackend(kafka, ToolLimits(), data=corpus_data), workspace) as c:
            discovered_kafka = as_reply(await c.call_tool("session_trace", {}))
    async with mcp_client(embedded(corpus_data), window(CALLER)) as client:
        mcp_embedded = as_reply(await client.call_tool("session_trace", FOREIGN_CALL))
    workspace = window(cwd="/home/dev/acp-agent")
    async with mcp_client(embedded(corpus_data), workspace) as client:
        discovered_embedded = as_reply(await client.call_tool("session_trace", {}))

    assert over_kafka.text.startswith("SESSION_QUERY_")
    assert mcp_kafka == over_kafka == mcp_embedded == cli_replies["foreign-target"]
    assert mcp_search == cli_replies["search"] and mcp_search.ok
    assert discovered_kafka == discovered_embedded and discovered_kafka.ok


async def test_a_signing_kafka_backend_vouches_for_its_caller_and_an_unsigned_one_is_refused(
    corpus_data: Path,
    cli_replies: dict[str, CliReply],
    kafka_bootstrap: str,
    topic_factory: Callable[..., Awaitable[str]],
    unique_name: Callable[[str], str],
    tmp_path: Path,
) -> None:
    private, public = generate_key_pair()
    key_file = tmp_path / "host.key"
    key_file.write_text(private)
    keyring = tmp_path / "keyring.json"
    keyring.write_text(json.dumps({"keys": [keyring_entry("host", public, ["/home/dev"])]}))
    signer = CallerSigner.from_file("host", key_file)
    topics = await create_topics(kafka_bootstrap, topic_factory, events=1, requests=2)
    kafka = topics.kafka()
    search = next(c for c in CASES if c.name == "search")
    caller = window(CALLER)
    vouched = CallerBinder(workspace="/home/dev/acp-agent")
    async with running_worker(corpus_data, kafka, unique_name("mcp"), keyring=keyring) as worker:
        await wait_assigned(worker, 2)
        signing = KafkaBackend(kafka, ToolLimits(), signer=signer)
        async with mcp_client(signing, caller, vouched) as client:
            signed = as_reply(await client.call_tool(search.tool, search.arguments))
            foreign = as_reply(await client.call_tool("session_trace", FOREIGN_CALL))
        async with mcp_client(KafkaBackend(kafka, ToolLimits()), caller, vouched) as client:
            unsigned = as_reply(await client.call_tool(search.tool, search.arguments))
    assert signed == cli_replies["search"] and signed.ok
    assert foreign == cli_replies["foreign-target"]
    assert unsigned == CliReply(
        False,
        "SESSION_QUERY_CALLER_UNAUTHENTICATED: the caller of this request is not authenticated",
    )
