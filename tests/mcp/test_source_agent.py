"""Issue 12 item 3 over MCP: ``_meta["sessionq/source_agent"]`` narrows ``session_search``
to sessions imported from the given agents — the embedded HTTP API's
``extensions.source_agent`` filter, with the five upstream schemas unchanged."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson

from tests.data_paths import CORPUS_DIR
from tests.fixtures.importers import CC_LEGACY_PARENT, CC_MAIN, CLAUDE_PROJECTS
from tests.fixtures.kafka import KafkaCase
from tests.kafka.harness import create_topics, running_worker, wait_assigned
from tests.mcp.inprocess import embedded, mcp_client, window
from tests.mcp.test_transports import as_reply
from worker.calls.limits import ToolLimits
from worker.cli.main import main
from worker.transports.mcp.backends import KafkaBackend
from worker.transports.mcp.extensions import SOURCE_AGENT_META_KEY

DSH_SHOP = CORPUS_DIR / "examples__acp-agent__bash-tool-turn__session.jsonl"


def mixed_store(tmp_path: Path) -> tuple[Path, str]:
    """A dsh session and two Claude Code sessions in one workspace (/home/dev/shop)."""
    logs = tmp_path / "mixed"
    logs.mkdir()
    shop = tmp_path / "claude"
    shutil.copytree(CLAUDE_PROJECTS / "-home-dev-shop", shop)
    dsh = DSH_SHOP.read_bytes().replace(b'"/home/dev/acp-agent"', b'"/home/dev/shop"', 1)
    (logs / "dsh-shop.jsonl").write_bytes(dsh)
    for sid in (CC_MAIN, CC_LEGACY_PARENT):
        (logs / f"{sid}.jsonl").write_bytes((shop / f"{sid}.jsonl").read_bytes())
    data = tmp_path / "data"
    assert main(["ingest", str(logs), "--data", str(data)]) == 0
    return data, orjson.loads(dsh.split(b"\n", 1)[0])["id"]


async def test_the_source_agent_meta_narrows_a_search_over_mcp(tmp_path: Path) -> None:
    data, dsh_id = mixed_store(tmp_path)
    async with mcp_client(embedded(data), window(CC_LEGACY_PARENT)) as client:

        async def search(meta: dict[str, object] | None, tool: str = "session_search") -> str:
            arguments = {"query": "the"} if tool == "session_search" else {}
            reply = as_reply(await client.call_tool(tool, arguments, meta=meta))
            return reply.text if reply.ok else f"ERROR {reply.text}"

        plain = await search(None)
        assert CC_MAIN in plain and dsh_id in plain
        only_cc = await search({SOURCE_AGENT_META_KEY: ["claude-code"]})
        assert CC_MAIN in only_cc and dsh_id not in only_cc
        only_dsh = await search({SOURCE_AGENT_META_KEY: ["dsh"]})
        assert dsh_id in only_dsh and CC_MAIN not in only_dsh
        none = await search({SOURCE_AGENT_META_KEY: ["codex"]})
        assert not none.startswith("ERROR") and CC_MAIN not in none and dsh_id not in none

        wrong_tool = await search({SOURCE_AGENT_META_KEY: ["dsh"]}, tool="session_trace")
        assert wrong_tool.startswith("ERROR INVALID_ARGS: invalid arguments:"), wrong_tool
        assert "session_search only" in wrong_tool
        malformed = await search({SOURCE_AGENT_META_KEY: "dsh"})
        assert malformed.startswith("ERROR INVALID_ARGS: invalid arguments:"), malformed
        assert SOURCE_AGENT_META_KEY in malformed

        # The tools listed stay upstream's: no source-agent property anywhere.
        listed = await client.list_tools()
        assert all("source_agent" not in str(tool.input_schema) for tool in listed.tools)


async def test_the_source_agent_meta_narrows_a_search_through_kafka_too(
    kafka_case: KafkaCase,
) -> None:
    """``sessionq mcp`` over Kafka with a replica (``--data``): the workers' pipeline takes
    no call options, so the host narrows ``session_ids`` with its replica before sending;
    the filter is never dropped."""
    kafka_bootstrap, topic_factory, unique_name, tmp_path = kafka_case.parts()
    data, dsh_id = mixed_store(tmp_path)
    topics = await create_topics(kafka_bootstrap, topic_factory, events=1, requests=2)
    kafka = topics.kafka()
    async with running_worker(data, kafka, unique_name("mcp-agents")) as worker:
        await wait_assigned(worker, 2)
        backend = KafkaBackend(kafka, ToolLimits(), data=data)
        async with mcp_client(backend, window(CC_LEGACY_PARENT)) as client:

            async def search(meta: dict[str, object] | None, arguments: dict[str, object]) -> str:
                reply = as_reply(await client.call_tool("session_search", arguments, meta=meta))
                assert reply.ok, reply.text
                return reply.text

            the = {"query": "the"}
            plain = await search(None, the)
            assert CC_MAIN in plain and dsh_id in plain
            only_cc = await search({SOURCE_AGENT_META_KEY: ["claude-code"]}, the)
            assert CC_MAIN in only_cc and dsh_id not in only_cc
            only_dsh = await search({SOURCE_AGENT_META_KEY: ["dsh"]}, the)
            assert dsh_id in only_dsh and CC_MAIN not in only_dsh
            # intersected with the call's own session_ids
            both = {"query": "the", "session_ids": [CC_MAIN, dsh_id]}
            narrowed = await search({SOURCE_AGENT_META_KEY: ["dsh"]}, both)
            assert dsh_id in narrowed and CC_MAIN not in narrowed
            none = await search({SOURCE_AGENT_META_KEY: ["codex"]}, the)
            assert CC_MAIN not in none and dsh_id not in none
