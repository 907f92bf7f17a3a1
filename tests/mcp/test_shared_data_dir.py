"""One data dir shared by several real processes: three ``sessionq mcp`` stdio servers
(driven by the MCP SDK's client) over the same logs, plus a ``sessionq ingest`` while
they run. One of them writes at a time (the writer lease); each sees every commit; a
new log is searchable through each; ``kill -9`` of the writer leaves the others to take
over, and a log written after that is searchable too."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp import ClientSession

from tests.builders import header, plain, user
from tests.data_paths import REPO_ROOT
from tests.fixtures.mcp import subprocess_env
from tests.fixtures.waiting import wait_until
from tests.mcp.stdio import stdio_session
from worker.devtools.demo_corpus.layout import session_path

WS = "/home/dev/shared"
DEADLINE_S = 90.0  # generous: a loaded 2-core machine; the target is about a second


def write_log(root: Path, sid: str, words: str) -> Path:
    path = root / session_path(WS, sid)
    path.parent.mkdir(parents=True, exist_ok=True)
    events: list[dict[str, Any]] = [
        plain(0, "turn/start", {"turn": 1}),
        plain(1, "step/start", {"turn": 1, "step": 1}),
        user(2, words),
    ]
    lines = [json.dumps({"type": "session", **header(sid, cwd=WS)})]
    lines += [json.dumps(e) for e in events]
    tmp = path.with_suffix(".tmp")
    tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    tmp.rename(path)  # appears whole, as a log that is written at once
    return path


async def finds(session: ClientSession, word: str, sid: str) -> bool:
    result = await session.call_tool("session_search", {"query": word})
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return not result.is_error and sid in block.text


async def all_find(sessions: list[ClientSession], word: str, sid: str) -> None:
    for n, session in enumerate(sessions):

        async def found(session: ClientSession = session) -> bool:
            return await finds(session, word, sid)

        await wait_until(found, timeout=DEADLINE_S, what=f"server {n} to find {sid!r}")


def writer_pid(data: Path) -> int:
    return int(json.loads((data / "writer.json").read_text())["pid"])


def ingest(paths: list[Path], data: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "worker", "ingest", *map(str, paths), "--data", str(data)],
        cwd=REPO_ROOT,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )


async def test_three_mcp_servers_and_an_ingest_share_one_data_dir(tmp_path: Path) -> None:
    root, other, data = tmp_path / "logs", tmp_path / "other", tmp_path / "data"
    write_log(root, "caller", "who else worked here")
    write_log(root, "old", "the original heron log")
    args = ("--sessions", str(root), "--data", str(data), "--caller", "caller")
    stacks = [contextlib.AsyncExitStack() for _ in range(3)]
    try:
        sessions = [await stack.enter_async_context(stdio_session(*args)) for stack in stacks]
        await all_find(sessions, "heron", "old")

        # An ingest of other logs while the servers run: it waits for its turn, completes,
        # and what it stored is searchable through every server.
        write_log(other, "ingested", "an imported walrus note")
        done = await asyncio.to_thread(ingest, [other], data)
        assert done.returncode == 0, done.stderr
        assert "ingested 1 sessions" in done.stdout
        await all_find(sessions, "walrus", "ingested")

        # A new log in the watched root: applied by whichever server writes now.
        write_log(root, "fresh", "a fresh kestrel log")
        await all_find(sessions, "kestrel", "fresh")

        # kill -9 the writer: another server takes over; a log written after that is
        # searchable through the two that are left.
        victim = writer_pid(data)
        os.kill(victim, signal.SIGKILL)
        alive: list[ClientSession] = []
        failures: list[Exception] = []
        for session in sessions:
            try:
                await asyncio.wait_for(finds(session, "kestrel", "fresh"), DEADLINE_S)
                alive.append(session)
            except Exception as exc:  # the killed server's pipe is closed
                failures.append(exc)
        assert len(alive) == 2, failures
        write_log(root, "after", "written after the kill: an osprey")
        await all_find(alive, "osprey", "after")
        assert writer_pid(data) != victim, "no server took the writer lease over"
    finally:
        # Last opened, first closed: the SDK's task groups nest (closing one in the
        # middle would cancel the connections opened after it).
        for stack in reversed(stacks):
            with contextlib.suppress(BaseException):
                await stack.aclose()
