"""``sessionq mcp`` through the SDK's own clients, over stdio (a subprocess) and
Streamable HTTP (a subprocess on a free port): the upstream tools, and for every call
over the real corpus the bytes ``sessionq call`` prints."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import orjson
import pytest
from mcp import Client, ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from tests.data_paths import CORPUS_DIR, REPO_ROOT, UPSTREAM_TOOL_SCHEMAS
from tests.fixtures.mcp import (
    CALLER,
    CASES,
    SIBLING,
    CliReply,
    cli_call,
    mcp_argv,
    subprocess_env,
)
from tests.fixtures.waiting import wait_until
from tests.mcp.http_process import start_http
from tests.mcp.stdio import stdio_session
from tests.tool_names import unknown_tool_message
from worker.cli.main import main
from worker.transports.mcp.http import MCP_PATH

TOKEN = "s3cret-mcp-token"


def as_reply(result: types.CallToolResult) -> CliReply:
    assert len(result.content) == 1
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return CliReply(not result.is_error, block.text)


async def check_session(session: ClientSession, expected: dict[str, CliReply]) -> None:
    """The five upstream tools, then every case byte for byte, then an unknown tool."""
    upstream = json.loads(UPSTREAM_TOOL_SCHEMAS.read_text(encoding="utf-8"))
    listed = await session.list_tools()
    assert [(t.name, t.description, t.input_schema) for t in listed.tools] == [
        (u["name"], u["description"], u["parameters"]) for u in upstream["tools"]
    ]
    for case in CASES:
        result = await session.call_tool(case.tool, case.arguments)
        assert as_reply(result) == expected[case.name], case.name
    assert expected["search"].text.startswith("Session search results (4):")
    assert "Event search results (1):" in expected["event-search"].text
    assert expected["missing-query"].text.startswith("INVALID_ARGS: invalid arguments")
    with pytest.raises(MCPError) as raised:
        await session.call_tool("session_grep", {"query": "x"})
    assert raised.value.error.code == types.INVALID_PARAMS
    assert raised.value.error.message == unknown_tool_message('"session_grep"')


async def test_stdio_lists_the_upstream_tools_and_prints_what_sessionq_call_prints(
    corpus_data: Path, cli_replies: dict[str, CliReply]
) -> None:
    async with stdio_session("--data", str(corpus_data), "--caller", CALLER) as session:
        await check_session(session, cli_replies)


async def test_stdio_over_watched_sessions_ingests_then_answers_the_same(
    tmp_path: Path, cli_replies: dict[str, CliReply]
) -> None:
    data = tmp_path / "data"
    args = ("--sessions", str(CORPUS_DIR), "--data", str(data), "--caller", CALLER)
    async with stdio_session(*args) as session:
        for name in ("search", "foreign-target", "event-read"):
            case = next(c for c in CASES if c.name == name)
            assert (
                as_reply(await session.call_tool(case.tool, case.arguments)) == (cli_replies[name])
            )


@contextlib.asynccontextmanager
async def http_server(*args: str, cwd: Path = REPO_ROOT) -> AsyncIterator[str]:
    """A ``sessionq mcp --transport http`` subprocess on a free port; yields its URL."""
    proc, url = await start_http(*args, cwd=cwd)
    try:
        assert url.endswith(MCP_PATH)
        yield url
    finally:
        proc.terminate()
        await proc.wait()


async def test_http_answers_only_with_the_token_and_prints_what_sessionq_call_prints(
    corpus_data: Path, cli_replies: dict[str, CliReply], tmp_path: Path
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    args = ("--data", str(corpus_data), "--caller", CALLER, "--token-file", str(token_file))
    async with http_server(*args) as url:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
        async with httpx2.AsyncClient() as raw:
            for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}):
                response = await raw.post(url, json=body, headers=headers)
                assert response.status_code == 401, headers
                assert response.json()["error"]["code"] == "UNAUTHENTICATED"
                assert response.headers["www-authenticate"] == "Bearer"
                assert TOKEN not in response.text
        client = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"})
        async with (
            client,
            streamable_http_client(url, http_client=client) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            await check_session(session, cli_replies)


async def test_http_bodies_are_bounded_declared_or_chunked(
    corpus_data: Path, tmp_path: Path
) -> None:
    from worker.contract.envelopes import MAX_REQUEST_BYTES

    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    args = ("--data", str(corpus_data), "--caller", CALLER, "--token-file", str(token_file))
    pad = "p" * (MAX_REQUEST_BYTES + 1)
    body = orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"pad": pad}})

    async def chunked() -> AsyncIterator[bytes]:
        for start in range(0, len(body), 65536):
            yield body[start : start + 65536]

    auth = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    async with http_server(*args) as url, httpx2.AsyncClient() as raw:
        for content in (body, chunked()):
            response = await raw.post(url, content=content, headers=auth)
            assert response.status_code == 413
            assert response.json()["error"]["code"] == "PAYLOAD_TOO_LARGE"
        # Without the token the body is not looked at: 401 first.
        response = await raw.post(url, content=body, headers={"Content-Type": "application/json"})
        assert response.status_code == 401


def test_http_beyond_loopback_needs_a_token_file(
    corpus_data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["mcp", "--transport", "http", "--listen", "0.0.0.0:0", "--data", str(corpus_data)]
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is not a loopback address" in err and "--token-file" in err


def test_mcp_needs_a_backend(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["mcp"])
    assert exited.value.code == 2
    assert "give --data DIR (embedded) or --bootstrap HOST:PORT (Kafka)" in capsys.readouterr().err


def test_a_signing_key_needs_the_callers_workspace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = tmp_path / "host.key"
    key.write_text("not read before the settings are valid")
    argv = ["mcp", "--bootstrap", "127.0.0.1:1", "--signing-key", str(key), "--key-id", "k"]
    with pytest.raises(SystemExit) as exited:
        main([*argv, "--caller", CALLER])
    assert exited.value.code == 2
    assert "give --workspace (its cwd) or --data" in capsys.readouterr().err


def test_the_reference_is_the_cli_for_another_caller_too(corpus_data: Path) -> None:
    """A sanity check of the reference helper: a different caller sees other text."""
    other = SIBLING
    mine = cli_call(corpus_data, "session_trace", {})
    theirs = cli_call(corpus_data, "session_trace", {}, caller=other)
    assert mine.ok and theirs.ok and mine.text != theirs.text


async def test_http_binds_each_connection_to_the_caller_of_its_roots(tmp_path: Path) -> None:
    from tests.mcp.test_binding import _workspaces

    ws, other, data = _workspaces(tmp_path)
    nowhere = tmp_path / "nowhere"
    nowhere.mkdir()
    expected = {
        ws: await asyncio.to_thread(cli_call, data, "session_trace", {}, "new"),
        other: await asyncio.to_thread(cli_call, data, "session_trace", {}, "open"),
    }

    def roots_of(root: Path) -> Any:
        async def roots(_ctx: object) -> types.ListRootsResult:
            return types.ListRootsResult(roots=[types.Root(uri=root.as_uri())])

        return roots

    async with http_server("--data", str(data), cwd=nowhere) as url:
        for root in (ws, other, ws):
            async with (
                streamable_http_client(url) as (read, write),
                ClientSession(read, write, list_roots_callback=roots_of(root)) as session,
            ):
                await session.initialize()
                first = as_reply(await session.call_tool("session_trace", {}))
                assert first == expected[root]
                assert as_reply(await session.call_tool("session_trace", {})) == first
        async with (  # no roots: the server's cwd, where no session lives
            streamable_http_client(url) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            missing = as_reply(await session.call_tool("session_trace", {}))
    assert not missing.ok
    assert missing.text.startswith("SESSION_QUERY_TOOL_MISSING_AGENT: no caller session:")
    assert str(nowhere) in missing.text


async def test_stdio_speaks_the_newest_protocol_revision_too(
    corpus_data: Path, cli_replies: dict[str, CliReply]
) -> None:
    """The SDK's high-level ``Client`` negotiates the newest revision (``server/discover``,
    no handshake) when the server offers it; the answers are the same."""
    argv = mcp_argv("--data", str(corpus_data), "--caller", CALLER)
    params = StdioServerParameters(
        command=argv[0], args=argv[1:], env=subprocess_env(), cwd=str(REPO_ROOT)
    )
    async with Client(stdio_client(params)) as client:
        assert client.protocol_version in MODERN_PROTOCOL_VERSIONS
        listed = await client.list_tools()
        assert [t.name for t in listed.tools] == [
            "session_search",
            "session_event_search",
            "session_trace",
            "session_event_trace",
            "session_event_read",
        ]
        for case in CASES:
            assert (
                as_reply(await client.call_tool(case.tool, case.arguments))
                == (cli_replies[case.name])
            ), case.name


def _ingested(data: Path, *files: Path) -> Path:
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["ingest", *map(str, files), "--data", str(data)]) == 0
    return data


async def test_stdio_watcher_answers_for_a_log_that_appears_after_start(tmp_path: Path) -> None:
    """An agent's own log may appear only after its MCP server started: the watcher
    ingests it and the next call answers for it."""
    first = CORPUS_DIR / "examples__acp-agent__text-turn__session.jsonl"
    later = CORPUS_DIR / "examples__acp-agent__advanced-toolchain__session.1.jsonl"
    case = ("session_search", {"query": "the"})
    before_ref = _ingested(tmp_path / "ref-before", first)
    after_ref = _ingested(tmp_path / "ref-after", first, later)
    before = await asyncio.to_thread(cli_call, before_ref, *case, SIBLING)
    after = await asyncio.to_thread(cli_call, after_ref, *case, SIBLING)
    assert not before.ok and after.ok
    root = tmp_path / "root"
    root.mkdir()
    shutil.copy(first, root)
    args = ("--sessions", str(root), "--data", str(tmp_path / "data"), "--caller", SIBLING)
    async with stdio_session(*args) as session:
        assert as_reply(await session.call_tool(*case)) == before
        shutil.copy(later, root)
        replies: list[CliReply] = []

        async def answered() -> bool:
            replies.append(as_reply(await session.call_tool(*case)))
            return replies[-1].ok

        await wait_until(answered, timeout=30, what="the new log to be ingested")
    assert replies[-1] == after


async def test_http_without_a_token_answers_only_allowed_host_names(corpus_data: Path) -> None:
    """The one DNS-rebinding rule of ``serve`` (``worker.webguard.origin``): local names and
    ``--allowed-hosts``; anything else 421 (Host) or 403 (Origin), as JSON."""
    args = ("--data", str(corpus_data), "--caller", CALLER, "--allowed-hosts", "devbox.lan")
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    accept = {"Accept": "application/json, text/event-stream"}
    async with http_server(*args) as url, httpx2.AsyncClient() as raw:
        for headers, status in (
            ({"Host": "attacker.example"}, 421),
            ({"Origin": "http://attacker.example"}, 403),
        ):
            response = await raw.post(url, json=body, headers={**accept, **headers})
            assert response.status_code == status, headers
            assert response.json()["error"]["code"] == "FORBIDDEN_HOST"
        for headers in ({}, {"Host": "devbox.lan:1"}, {"Origin": "http://devbox.lan"}):
            response = await raw.post(url, json=body, headers={**accept, **headers})
            assert response.status_code != 421 and response.status_code != 403, headers
