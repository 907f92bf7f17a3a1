"""A session (and its subagents) as one Markdown document: the transcript's blocks
written as a person would paste them, redacted as every view is (the blocks come from
redacted reads).

Code from a log is fenced with more backticks than it holds, so no text of a log can
close its fence and turn into Markdown of its own.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any, Final

from worker.reader.blocks import Block

__all__ = ["SessionExport", "export_markdown", "fenced"]

_TICKS: Final = re.compile(r"`{3,}")


def fenced(text: str, language: str = "") -> str:
    """``text`` in a code fence longer than any backtick run it holds."""
    longest = max((len(m.group()) for m in _TICKS.finditer(text)), default=2)
    fence = "`" * (longest + 1)
    return f"{fence}{language}\n{text}{'' if text.endswith(chr(10)) else chr(10)}{fence}"


def iso(ms: Any) -> str:
    if not isinstance(ms, int):
        return ""
    try:
        return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (OverflowError, OSError, ValueError):
        return str(ms)


def _block(block: Block) -> str:
    kind = block["kind"]
    at = f"seq {block['seq']}, {iso(block.get('time'))}"
    if kind == "partial" and block.get("text") is None:
        return f"*An interrupted stream of {block.get('deltas', 0)} deltas* ({at})"
    if kind in ("user", "assistant", "partial"):
        who = {"user": "User", "assistant": "Assistant", "partial": "Assistant (interrupted)"}
        return f"### {who[kind]} · {at}\n\n{block['text']}"
    if kind == "context":
        return (
            f"### Context from {block.get('source', 'a plugin')} · {at}\n\n{fenced(block['text'])}"
        )
    if kind == "thinking":
        quoted = "\n".join(f"> {line}" for line in block["text"].splitlines())
        return f"### Thinking · {at}\n\n{quoted}"
    if kind == "tool":
        parts = [f"### Tool call `{block.get('name') or 'tool'}` · {at}"]
        if block.get("input") is not None:
            parts.append(fenced(block["input"], "json"))
        result = block.get("result")
        if result is not None:
            label = "Error" if result["is_error"] else "Result"
            if result.get("error"):
                label += f" ({result['error']})"
            parts.append(f"{label} (seq {result['seq']}):\n\n{fenced(result['text'])}")
        return "\n\n".join(parts)
    if kind == "note":
        return f"*{block['text']}* ({at})"
    return ""


class SessionExport:
    """One session's part of an export: its facts, then its blocks."""

    def __init__(self, facts: dict[str, Any], depth: int) -> None:
        self.facts = facts
        self.depth = depth
        self.parts: list[str] = []

    def head(self) -> str:
        f = self.facts
        marks = "#" * min(2 + self.depth, 6) if self.depth else "#"
        lines = [
            f"{marks} {f.get('title') or 'untitled'}",
            "",
            f"- Session: `{f['id']}`",
            f"- Agent: {f.get('source_agent') or 'dsh'}",
            f"- Created: {iso(f.get('created_at'))}",
            f"- Workspace: {f.get('cwd') or 'none'}",
        ]
        if f.get("parent"):
            lines.append(f"- Parent: `{f['parent']}`")
        return "\n".join(lines)

    def add(self, blocks: Iterable[Block]) -> int:
        """Add the blocks' Markdown; how many characters it holds."""
        texts = [text for text in map(_block, blocks) if text]
        self.parts.extend(texts)
        return sum(map(len, texts))


def export_markdown(sessions: Iterable[SessionExport], note: str | None) -> str:
    out: list[str] = []
    for session in sessions:
        out.append(session.head())
        out.extend(session.parts)
    if note:
        out.append(f"*{note}*")
    return "\n\n".join(out) + "\n"
