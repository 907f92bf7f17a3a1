"""What an agent tells its MCP server about who is calling, read once per window and once
per call. Standard library only: the thin stdio front (``worker.cli.mcp_front``) reads a
window's variables without loading the server.

A *window* is one agent process that started one ``sessionq mcp``: its working directory,
an explicit caller (``--caller`` / ``SESSIONQ_CALLER``), the agent's session variables
and when it started. None of it is the model's: the agent sets them before any tool
call. What each agent gives a stdio MCP server (docs: README, "Which session is calling"):

* Claude Code: ``CLAUDE_CODE_SESSION_ID`` (the session it was spawned for; kept after
  ``/clear``), and per call ``_meta["claudecode/toolUseId"]``, the id of the ``tool_use``
  block its log records for that call;
* Codex: per call ``_meta.threadId`` and ``_meta["x-codex-turn-metadata"].thread_id``,
  the thread (its rollout's session id); ``CODEX_THREAD_ID`` reaches shell tools only;
* OpenCode 2: per call ``_meta.sessionID``;
* Gemini CLI, Copilot CLI: nothing.

A hint is only ever a candidate: the binder takes a named session only when it is one of
the window's workspace's sessions (``worker.transports.mcp.binding``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

# The agents' session variables a window's server may inherit, in the order they are
# believed: a variable an agent sets for its own server before one inherited from a shell.
SESSION_VARIABLES: Final = ("CLAUDE_CODE_SESSION_ID", "OPENCODE_SESSION_ID", "CODEX_THREAD_ID")
# Per-call ``_meta`` keys naming the calling session (Codex, OpenCode).
SESSION_META_KEYS: Final = ("threadId", "sessionID", "ai.opencode/sessionID")
CODEX_TURN_META_KEY: Final = "x-codex-turn-metadata"
# Per-call ``_meta`` keys naming the call as the agent's log records it (Claude Code).
CALL_ID_META_KEYS: Final = ("claudecode/toolUseId",)
MAX_ID_CHARS: Final = 512  # a longer value names no session: ignored


@dataclass(frozen=True, slots=True)
class Window:
    """The agent window a connection serves (module docstring); ``started_ms`` is when
    its server started (wall clock, ms), the earliest a call of it can be recorded."""

    cwd: str
    caller: str | None = None
    hints: tuple[tuple[str, str], ...] = ()
    started_ms: int = 0
    label: str = "window"

    def hint(self) -> tuple[str, str] | None:
        """The first session variable set, as (variable, session id)."""
        return self.hints[0] if self.hints else None


def session_hints(environ: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """The agents' session variables set in ``environ``, in ``SESSION_VARIABLES`` order."""
    return tuple(
        (name, environ[name].strip())
        for name in SESSION_VARIABLES
        if _usable(environ.get(name, "").strip())
    )


@dataclass(frozen=True, slots=True)
class CallFacts:
    """One ``tools/call`` as the binder sees it: the tool, the model's arguments, and
    what the agent's ``_meta`` says about the call (its id, the calling session)."""

    tool: str
    arguments: Any
    call_id: str | None = None
    sessions: tuple[tuple[str, str], ...] = field(default=())

    @classmethod
    def of(cls, tool: str, arguments: Any, meta: Mapping[str, Any] | None) -> CallFacts:
        meta = meta or {}
        call_id = next((meta[k] for k in CALL_ID_META_KEYS if _usable(meta.get(k))), None)
        named = [(k, str(meta[k])) for k in SESSION_META_KEYS if _usable(meta.get(k))]
        turn = meta.get(CODEX_TURN_META_KEY)
        if isinstance(turn, Mapping) and _usable(turn.get("thread_id")):
            named.append((f"{CODEX_TURN_META_KEY}.thread_id", turn["thread_id"]))
        return cls(tool, arguments, call_id, tuple(named))


def _usable(value: Any) -> bool:
    return isinstance(value, str) and 0 < len(value) <= MAX_ID_CHARS
