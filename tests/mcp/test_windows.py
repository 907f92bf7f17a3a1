"""Every agent window answers as itself: the real ``sessionq mcp`` over a Claude Code
projects tree, driven by the SDK's client, while the test writes the agent's log the way
Claude Code does (a user record, then the assistant record holding the ``tool_use`` of
the MCP call, then the request, carrying the ``tool_use`` id in ``_meta``).

* ``/clear`` starts a new session log in the same project while the same server runs:
  the next call is answered for the new session, found by the record of that very call,
  written 0 ms before the request;
* without the id in ``_meta`` (an older agent) the record is found by tool and arguments;
* ``--resume`` of an older session: the window's session variable names it, and its calls
  are answered for it although a newer session exists;
* two windows in one project at once, each with its own session: each is answered as
  itself, call after call.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from pathlib import Path
from typing import Any, Final

import pytest
from mcp import ClientSession

from tests.mcp.stdio import stdio_session
from tests.mcp.test_transports import as_reply

pytestmark = pytest.mark.slow
TOOL_PREFIX: Final = "mcp__sessionq__"
_ENCODED: Final = re.compile(r"[^A-Za-z0-9]")


class Agent:
    """One Claude Code project: its working directory and its projects tree."""

    def __init__(self, tmp_path: Path) -> None:
        self.cwd = tmp_path / "work" / "shop"
        self.cwd.mkdir(parents=True)
        self.projects = tmp_path / "claude" / "projects"
        self.folder = self.projects / _ENCODED.sub("-", str(self.cwd))
        self.folder.mkdir(parents=True)
        self.data = tmp_path / "data"

    def log(self, sid: str) -> Path:
        return self.folder / f"{sid}.jsonl"

    def _append(self, sid: str, record: dict[str, Any], ahead_s: int = 0) -> None:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(time.time() + ahead_s)) + ".000Z"
        base = {"sessionId": sid, "cwd": str(self.cwd), "uuid": str(uuid.uuid4()),
                "timestamp": stamp, "version": "2.1.170", "userType": "external"}  # fmt: skip
        with self.log(sid).open("a", encoding="utf-8") as f:
            f.write(json.dumps({**base, **record}) + "\n")

    def prompt(self, sid: str, text: str, ahead_s: int = 0) -> None:
        message = {"role": "user", "content": text}
        self._append(sid, {"type": "user", "message": message}, ahead_s)

    def tool_use(self, sid: str, tool: str, arguments: dict[str, Any]) -> str:
        """The assistant record of an MCP tool call; its ``tool_use`` id."""
        call_id = f"toolu_{uuid.uuid4().hex[:24]}"
        block = {"type": "tool_use", "id": call_id, "name": TOOL_PREFIX + tool,
                 "input": arguments}  # fmt: skip
        message = {"id": f"msg_{uuid.uuid4().hex[:12]}", "role": "assistant",
                   "model": "claude-sonnet-4-5", "content": [block]}  # fmt: skip
        self._append(sid, {"type": "assistant", "message": message})
        return call_id

    def window(self, sid: str) -> Any:
        """``sessionq mcp`` as Claude Code starts it for a window of session ``sid``."""
        return stdio_session(
            "--data", str(self.data), "--sessions", str(self.projects),
            cwd=self.cwd, env={"CLAUDE_CODE_SESSION_ID": sid},
        )  # fmt: skip


def sid() -> str:
    return str(uuid.uuid4())


async def traced(session: ClientSession, agent: Agent, sid: str, *, meta: bool = True) -> str:
    """``session_trace {}`` made as the agent makes it from session ``sid``: the record
    first, then the request at once; the session the reply is about."""
    call_id = agent.tool_use(sid, "session_trace", {})
    reply = as_reply(
        await session.call_tool(
            "session_trace", {}, meta={"claudecode/toolUseId": call_id} if meta else None
        )
    )
    assert reply.ok, reply.text
    first = reply.text.splitlines()[0]
    found = re.match(r"Session (\S+) ", first)
    assert found is not None, reply.text
    return found.group(1)


async def test_after_clear_the_next_call_is_answered_for_the_new_session(
    tmp_path: Path,
) -> None:
    agent = Agent(tmp_path)
    first = sid()
    agent.prompt(first, "add a cart total to the shop page")
    async with agent.window(first) as session:
        assert await traced(session, agent, first) == first
        # /clear: a new session log in the same project, the same server running on
        cleared = sid()
        agent.prompt(cleared, "now the checkout button")
        assert await traced(session, agent, cleared) == cleared  # 0 ms after its record
        assert await traced(session, agent, cleared) == cleared
        # an agent that sends no id: the record is found by tool and arguments
        again = sid()
        agent.prompt(again, "and the receipt email")
        assert await traced(session, agent, again, meta=False) == again


async def test_a_resumed_session_is_answered_for_itself_beside_a_newer_one(
    tmp_path: Path,
) -> None:
    agent = Agent(tmp_path)
    older, newer = sid(), sid()
    agent.prompt(older, "start the inventory export")
    agent.prompt(newer, "unrelated newer work", ahead_s=5)  # created after it
    async with agent.window(older) as session:  # claude --resume <older>
        agent.prompt(older, "continue the export")
        assert await traced(session, agent, older) == older
        assert await traced(session, agent, older, meta=False) == older


async def test_two_windows_in_one_project_each_answer_as_themselves(tmp_path: Path) -> None:
    agent = Agent(tmp_path)
    left, right = sid(), sid()
    agent.prompt(left, "left window: the tax rules")
    agent.prompt(right, "right window: the shipping rates")
    async with agent.window(left) as one, agent.window(right) as two:
        for _ in range(2):
            assert await traced(one, agent, left) == left
            assert await traced(two, agent, right) == right
            assert await traced(one, agent, left, meta=False) == left
            assert await traced(two, agent, right, meta=False) == right
