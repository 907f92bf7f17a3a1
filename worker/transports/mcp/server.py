"""The MCP server: the five tools of the manifest, answered through a ``Backend``.

* ``tools/list`` — exactly the manifest's tools: upstream names, descriptions and
  parameter schemas (``worker/contract/schemas.json`` through ``worker.manifest``, one
  source) as ``inputSchema``; the prompt section is the server's ``instructions``.
* ``tools/call`` — the caller is the session that made the call, decided for each call
  (``worker.transports.mcp.binding``) from what the server's window and the call say; the reply is
  the one ``sessionq call`` prints: the tool's text as one ``TextContent``, or, for a
  tool error, ``isError: true`` with the text ``CODE: message`` (the CLI's stderr line)
  and the code and message under ``_meta["sessionq/error"]``. An unknown tool name is
  the protocol error the MCP specification asks for (``-32602``), not a tool result,
  with the registry's one unknown-tool message (``worker.tools.registry.lookup``).
* deadlines — a call's ``timeout_ms`` is ``_meta["sessionq/timeout_ms"]`` when the
  client sends one (an extension; MCP carries no request timeout), capped as for every
  transport (the tool's budget, ``--max-timeout-ms``). The backend computes the
  deadline once (the pipeline's step 2) and the call runs under that same deadline.
  While a call runs past ``PROGRESS_EVERY_S`` and the client gave a ``progressToken``,
  the server reports progress (elapsed ms of the deadline's budget, ``total``), so
  clients that extend their own timeout on progress wait exactly as long as the
  deadline and no longer.
* extensions — sessionq's own request options ride ``_meta["sessionq/..."]``, never the
  five upstream schemas (``read_extensions``): ``timeout_ms`` today; a filter on a
  session's source agent would be read there too and passed on to the backend.
* cancellation — ``notifications/cancelled`` (also what the SDK clients send when their
  own request timeout fires) interrupts the handler; the backend cancels the call
  (``worker.transports.mcp.backends``).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Final

import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPError

from indexer.surface.jstext import to_well_formed
from worker.contract.deadline import Deadline
from worker.contract.envelopes import Reply, error_reply
from worker.contract.errors import HarnessError, UnknownToolError
from worker.manifest import manifest
from worker.tools.registry import lookup
from worker.transports.mcp.backends import Backend, McpCall
from worker.transports.mcp.binding import BindingError, CallerBinder
from worker.transports.mcp.extensions import check_extensions, read_extensions
from worker.transports.mcp.window import CallFacts, Window

SERVER_NAME: Final = "sessionq"
ERROR_META_KEY: Final = "sessionq/error"
PROGRESS_EVERY_S: Final = 1.0


def mcp_tools(backend: Backend) -> list[types.Tool]:
    """The manifest's five tools as MCP tools, in the manifest's order."""
    return [
        types.Tool(
            name=tool["name"],
            description=tool["description"],
            input_schema=tool["parameters"],
        )
        for tool in manifest(backend.limits)["tools"]
    ]


def reply_result(reply: Reply) -> types.CallToolResult:
    """A reply envelope as the MCP result (module docstring)."""
    if reply.ok:
        text = to_well_formed(reply.text or "")
        return types.CallToolResult(content=[types.TextContent(text=text)])
    assert reply.error is not None
    code, message = reply.error.code, to_well_formed(reply.error.message)
    return types.CallToolResult(
        content=[types.TextContent(text=f"{code}: {message}")],
        is_error=True,
        _meta={ERROR_META_KEY: {"code": code, "message": message}},
    )


def _connection_of(ctx: ServerRequestContext[Any, Any], stream: str) -> str | None:
    """The connection a request belongs to: a stream (stdio, a window's socket) is one
    connection, named ``stream``; Streamable HTTP names its session in
    ``Mcp-Session-Id`` (absent: a connectionless request)."""
    request = ctx.request
    if request is None:
        return stream
    headers = getattr(request, "headers", None)
    return headers.get("mcp-session-id") if headers is not None else None


def build_server(
    backend: Backend, binder: CallerBinder, window: Window, stream: str = "stdio"
) -> Server[Any]:
    """The low-level SDK server for ``backend``, serving the agent ``window`` (module
    docstring); ``stream`` names its connection when it serves one stream."""
    tools = mcp_tools(backend)
    schemas = {tool.name: tool.input_schema for tool in tools}

    async def list_tools(
        _ctx: ServerRequestContext[Any, Any], _params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        name = params.name
        tool = lookup(name)
        if isinstance(tool, UnknownToolError):  # the registry's one answer, as MCP's error
            raise MCPError(types.INVALID_PARAMS, tool.message)
        ext = read_extensions(params.meta)
        deadline = backend.deadline(tool, ext.timeout_ms)
        failure = await backend.ready_within(deadline)
        if failure is not None:
            return reply_result(error_reply("mcp", failure.code, failure.message))
        service = backend.service()
        arguments: Any = params.arguments if params.arguments is not None else {}
        facts = CallFacts.of(name, arguments, params.meta)
        connection = _connection_of(ctx, stream)
        try:
            caller = await binder.bind(window, connection, service, facts, deadline, ctx)
        except BindingError as exc:
            return reply_result(error_reply("mcp", exc.code, exc.message))
        try:
            check_extensions(ext, service, name)
        except HarnessError as exc:
            return reply_result(error_reply("mcp", exc.code, exc.message))
        planned = McpCall(tool, arguments, caller, deadline, ext.source_agents)
        call = asyncio.ensure_future(backend.call(planned))
        try:
            reply = await _with_progress(ctx, call, name, deadline)
        except asyncio.CancelledError:
            call.cancel()
            raise
        return reply_result(reply)

    return Server(
        SERVER_NAME,
        version=_version(),
        instructions=manifest(backend.limits)["prompt_section"]["text"],
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        get_tool_input_schema=schemas.get,
    )


async def _with_progress(
    ctx: ServerRequestContext[Any, Any], call: asyncio.Future[Reply], name: str, deadline: Deadline
) -> Reply:
    """Await the call; past ``PROGRESS_EVERY_S``, report the call's deadline's progress."""
    started = time.monotonic()
    budget = deadline.budget_ms
    while True:
        done, _ = await asyncio.wait({call}, timeout=PROGRESS_EVERY_S)
        if done:
            return call.result()
        elapsed = min(budget, int((time.monotonic() - started) * 1000))
        await ctx.session.report_progress(
            float(elapsed), float(budget), f"{name} running ({elapsed} of {budget} ms)"
        )


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("sessionq")
    except PackageNotFoundError:
        return "0"
