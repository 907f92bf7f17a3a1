"""Caller binding: an explicit caller, or the newest session of the working directory
(or of the client's roots), bound once per connection; a clear error when none."""

from __future__ import annotations

import asyncio
from pathlib import Path

import mcp_types as types

from tests.builders import BASE_TIME, header, user
from tests.fixtures.mcp import CliReply, cli_call
from tests.fixtures.stores import build_store
from tests.mcp.inprocess import embedded, mcp_client, window
from tests.mcp.test_transports import as_reply
from worker.transports.mcp.window import Window


def _workspaces(tmp_path: Path) -> tuple[Path, Path, Path]:
    """Two real directories holding sessions: in ``ws`` "new" is the newest; in
    ``other`` "open" is older than "elsewhere" but its host has it open."""
    ws, other, data = tmp_path / "ws", tmp_path / "other", tmp_path / "data"
    ws.mkdir()
    other.mkdir()
    sessions = [
        (header("old", cwd=str(ws), created_at=BASE_TIME + 1), [user(0, "hello old")]),
        (header("new", cwd=str(ws), created_at=BASE_TIME + 2), [user(0, "hello new")]),
        (header("elsewhere", cwd=str(other), created_at=BASE_TIME + 3), [user(0, "hi")]),
        (header("open", cwd=str(other), created_at=BASE_TIME), [user(0, "hi open")]),
    ]
    build_store(data, sessions, live=["open"])
    return ws, other, data


def _trace(data: Path, served: Window, **client_options: object) -> CliReply:
    async def run() -> CliReply:
        async with mcp_client(embedded(data), served, **client_options) as client:
            first = as_reply(await client.call_tool("session_trace", {}))
            again = as_reply(await client.call_tool("session_trace", {}))
            assert again == first  # the connection stays bound
            return first

    return asyncio.run(run())


def test_discovery_binds_the_newest_session_of_the_working_directory(tmp_path: Path) -> None:
    ws, _, data = _workspaces(tmp_path)
    expected = cli_call(data, "session_trace", {}, caller="new")
    assert expected.ok and expected != cli_call(data, "session_trace", {}, caller="old")
    assert _trace(data, window(cwd=ws)) == expected


def test_discovery_prefers_a_session_its_host_has_open(tmp_path: Path) -> None:
    _, other, data = _workspaces(tmp_path)
    assert _trace(data, window(cwd=other)) == cli_call(
        data, "session_trace", {}, caller="open"
    )


def test_discovery_uses_the_clients_roots_when_it_offers_them(tmp_path: Path) -> None:
    ws, other, data = _workspaces(tmp_path)

    async def roots(_ctx: object) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri=ws.as_uri())])

    bound = _trace(data, window(cwd=other), list_roots_callback=roots)
    assert bound == cli_call(data, "session_trace", {}, caller="new")


def test_an_explicit_caller_wins_over_discovery(tmp_path: Path) -> None:
    ws, _, data = _workspaces(tmp_path)
    assert _trace(data, window("old", cwd=ws)) == cli_call(
        data, "session_trace", {}, caller="old"
    )


def test_no_session_in_the_directory_is_a_clear_tool_error(tmp_path: Path) -> None:
    _, _, data = _workspaces(tmp_path)
    nowhere = tmp_path / "nowhere"
    reply = _trace(data, window(cwd=nowhere))
    assert not reply.ok
    assert reply.text == (
        "SESSION_QUERY_TOOL_MISSING_AGENT: no caller session: no session in the store has its"
        f" cwd in {nowhere}; set SESSIONQ_CALLER (or --caller) in the MCP server's configuration"
    )
