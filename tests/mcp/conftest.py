"""The MCP tests' shared inputs: the real corpus ingested once, the calls made over it,
and what ``sessionq call`` prints for each (the reference every transport must match)."""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.data_paths import CORPUS_DIR, REPO_ROOT
from worker.cli.main import main
from worker.mcp.window import SESSION_VARIABLES

CALLER = "85e6db1b-b2a5-5fb3-b045-5a0a2addb250"  # /home/dev/acp-agent
FOREIGN = "64633373-26e0-5b92-aa97-7d200928683b"  # /home/dev/web/workspace
SIBLING = "22222222-2222-4222-8222-222222222222"  # /home/dev/acp-agent too


@dataclass(frozen=True)
class Case:
    name: str
    tool: str
    arguments: dict[str, Any]


CASES: tuple[Case, ...] = (
    Case("search", "session_search", {"query": "PONG"}),
    Case("search-common", "session_search", {"query": "tool"}),
    Case("search-cjk", "session_search", {"query": "你好"}),
    Case("event-search-self", "session_event_search", {"query": "the"}),
    Case("event-search", "session_event_search", {"session_id": SIBLING, "query": "the"}),
    Case("trace-sibling", "session_trace", {"session_id": SIBLING}),
    Case("trace-self", "session_trace", {}),
    Case("event-trace", "session_event_trace", {"seq": 1}),
    Case("event-read", "session_event_read", {"seq": 0, "after": 3}),
    Case("foreign-target", "session_trace", {"session_id": FOREIGN}),
    Case("missing-query", "session_search", {}),
    Case("bad-seq", "session_event_read", {"seq": "zero"}),
)


@dataclass(frozen=True)
class CliReply:
    """What ``sessionq call`` printed: stdout and exit 0, or the error line and exit 3."""

    ok: bool
    text: str


def cli_call(
    data: Path, tool: str, arguments: Any, caller: str = CALLER, extra: Sequence[str] = ()
) -> CliReply:
    """``sessionq call`` in this process (no event loop may be running)."""
    out, err = io.StringIO(), io.StringIO()
    argv = ["call", tool, orjson.dumps(arguments).decode(), "--data", str(data), "--caller", caller]
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([*argv, *extra])
    assert code in (0, 3), err.getvalue()
    if code == 0:
        text = out.getvalue()
        assert text.endswith("\n"), text  # the tool's text, then the line's end
        return CliReply(True, text[:-1])
    line = err.getvalue()
    assert line.endswith("\n") and line.count("\n") == 1, line
    return CliReply(False, line[:-1])


@pytest.fixture(scope="session")
def corpus_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real corpus ingested by ``sessionq ingest`` (read only for every test)."""
    data = tmp_path_factory.mktemp("mcp-corpus") / "data"
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["ingest", str(CORPUS_DIR), "--data", str(data)]) == 0
    return data


@pytest.fixture(scope="session")
def cli_replies(corpus_data: Path) -> dict[str, CliReply]:
    """``sessionq call``'s output for every case."""
    return {case.name: cli_call(corpus_data, case.tool, case.arguments) for case in CASES}


DAEMON_IDLE_MS = "3000"  # a test's MCP daemons end soon after its windows


def subprocess_env(**extra: str) -> dict[str, str]:
    """The environment of a ``sessionq mcp`` subprocess: this checkout first on the path,
    no inherited ``SESSIONQ_*`` setting nor agent session variable; its MCP daemon ends
    ``DAEMON_IDLE_MS`` after its last window."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONQ_")}
    for name in SESSION_VARIABLES:
        env.pop(name, None)
    env["PYTHONPATH"] = str(REPO_ROOT)
    env["SESSIONQ_DAEMON_IDLE_MS"] = DAEMON_IDLE_MS
    env.update(extra)
    return env


def mcp_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "worker", "mcp", *args]
