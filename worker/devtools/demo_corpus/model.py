"""What a demo scenario is made of (turns, steps, tool uses, a delegation), and one
constructor per tool, so a scenario states only what differs: arguments and output."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class ToolUse:
    name: str
    arguments: dict[str, Any]
    result: str
    error: tuple[str, str] | None = None


@dataclass(frozen=True, slots=True)
class Step:
    say: str = ""
    tools: tuple[ToolUse, ...] = ()
    think: str = ""


@dataclass(frozen=True, slots=True)
class Delegation:
    description: str
    prompt: str
    steps: tuple[Step, ...]
    report: str
    announce: str


@dataclass(frozen=True, slots=True)
class Turn:
    user: str
    steps: tuple[Step, ...]
    todos: tuple[tuple[str, str], ...] = ()
    delegate: Delegation | None = None
    compact: str | None = None


@dataclass(frozen=True, slots=True)
class Scenario:
    key: str
    cwd: str | None
    lang: str
    title: str
    turns: tuple[Turn, ...]


# ---- tool uses ----------------------------------------------------------------------------------
def tool(
    name: str, arguments: dict[str, Any], result: str, error: tuple[str, str] | None = None
) -> ToolUse:
    return ToolUse(name, arguments, result, error)


def bash(command: str, output: str) -> ToolUse:
    return tool("bash", {"command": command}, output)


def read(path: str, offset: int, limit: int, output: str) -> ToolUse:
    return tool("read", {"path": path, "offset": offset, "limit": limit}, output)


def grep(pattern: str, path: str, output: str) -> ToolUse:
    return tool("grep", {"pattern": pattern, "path": path}, output)


def glob(pattern: str, output: str) -> ToolUse:
    return tool("glob", {"pattern": pattern}, output)


def edit(path: str, old: str, new: str, edits: int = 1) -> ToolUse:
    """An ``edit`` the tool reports as ``Applied <edits> edit(s) to <path>``."""
    noun = "edit" if edits == 1 else "edits"
    return tool("edit", {"path": path, "old": old, "new": new}, f"Applied {edits} {noun} to {path}")


def write(path: str, content: str, lines: int) -> ToolUse:
    """A ``write`` the tool reports as ``Wrote <lines> lines to <path>``."""
    return tool("write", {"path": path, "content": content}, f"Wrote {lines} lines to {path}")
