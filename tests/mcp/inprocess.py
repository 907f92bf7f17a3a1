"""An ``sessionq mcp`` server in this process, reached by the SDK's own ``Client`` over
its in-memory JSON-RPC transport (the legacy handshake: ``notifications/cancelled``
travels as on stdio)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from mcp import Client

from worker.limits import ToolLimits
from worker.mcp.backends import Backend, EmbeddedBackend
from worker.mcp.binding import CallerBinder
from worker.mcp.server import build_server


@contextlib.asynccontextmanager
async def mcp_client(
    backend: Backend, binder: CallerBinder, **client_options: Any
) -> AsyncIterator[Client]:
    await backend.start()
    try:
        server = build_server(backend, binder)
        async with Client(server, mode="legacy", **client_options) as client:
            yield client
    finally:
        await backend.stop()


def embedded(data: Path) -> EmbeddedBackend:
    return EmbeddedBackend(data, [], ToolLimits())
