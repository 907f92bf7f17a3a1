"""An ``sessionq mcp`` server in this process, reached by the SDK's own ``Client`` over
its in-memory JSON-RPC transport (the legacy handshake: ``notifications/cancelled``
travels as on stdio)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from mcp import Client

from worker.calls.limits import ToolLimits
from worker.transports.mcp.backends import Backend, EmbeddedBackend
from worker.transports.mcp.binding import CallerBinder
from worker.transports.mcp.server import build_server
from worker.transports.mcp.window import Window


def window(
    caller: str | None = None, *, cwd: Path | str = "/nowhere", hints: dict[str, str] | None = None
) -> Window:
    """The agent window a test's server serves: started now, in ``cwd``."""
    pairs = tuple((hints or {}).items())
    return Window(str(cwd), caller, pairs, int(time.time() * 1000), "test window")


@contextlib.asynccontextmanager
async def mcp_client(
    backend: Backend,
    served: Window,
    binder: CallerBinder | None = None,
    **client_options: Any,
) -> AsyncIterator[Client]:
    await backend.start()
    try:
        server = build_server(backend, binder or CallerBinder(), served)
        async with Client(server, mode="legacy", **client_options) as client:
            yield client
    finally:
        await backend.stop()


def embedded(data: Path) -> EmbeddedBackend:
    return EmbeddedBackend(data, [], ToolLimits())
