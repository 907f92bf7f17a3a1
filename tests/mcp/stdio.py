"""``sessionq mcp`` as a stdio subprocess, driven by the SDK's own client."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.data_paths import REPO_ROOT, UPSTREAM_TOOL_SCHEMAS
from tests.fixtures.mcp import mcp_argv, subprocess_env


@contextlib.asynccontextmanager
async def stdio_session(
    *args: str, cwd: Path = REPO_ROOT, env: dict[str, str] | None = None
) -> AsyncIterator[ClientSession]:
    """An initialized session with ``sessionq mcp ARGS`` (``env``: variables the agent
    sets for its server); the server ends with it."""
    argv = mcp_argv(*args)
    params = StdioServerParameters(
        command=argv[0], args=argv[1:], env=subprocess_env(**(env or {})), cwd=str(cwd)
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        init = await session.initialize()
        upstream = json.loads(UPSTREAM_TOOL_SCHEMAS.read_text(encoding="utf-8"))
        assert init.instructions == upstream["prompt_section"]
        yield session
