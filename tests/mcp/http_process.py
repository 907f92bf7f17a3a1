"""A real ``sessionq mcp --transport http`` process on a free port, for the tests that
drive it over the network."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.data_paths import REPO_ROOT
from tests.fixtures.mcp import mcp_argv, subprocess_env

PREFIX = "sessionq mcp on "


async def start_http(*args: str, cwd: Path = REPO_ROOT) -> tuple[asyncio.subprocess.Process, str]:
    """The process (stderr piped, read up to its URL line) and its URL; a process that
    exits first fails the test."""
    argv = mcp_argv("--transport", "http", "--listen", "127.0.0.1:0", *args)
    proc = await asyncio.create_subprocess_exec(
        *argv,
        env=subprocess_env(),
        cwd=str(cwd),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stderr is not None
    try:
        async with asyncio.timeout(60):
            while True:
                line = (await proc.stderr.readline()).decode()
                assert line, f"sessionq mcp exited: {await proc.wait()}"
                if line.startswith(PREFIX):
                    return proc, line.removeprefix(PREFIX).strip()
    except BaseException:
        proc.kill()
        await proc.wait()
        raise
