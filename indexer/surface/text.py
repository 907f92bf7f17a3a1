"""Semantic text of one event (SPEC §3): what the text filter, the full-text index and
the neighbour summaries of ``session_event_read`` all see.

The input is arbitrary decoded JSON from real logs, so every accessor is defensive: a
missing key, a value of the wrong JSON type or an unknown block contributes nothing and
the function never raises. Older message shapes (deliberate difference 9) read their
content from ``data.content`` when ``data.message`` is absent.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from indexer.surface.jstext import js_trim

__all__ = ["block_texts", "content_text", "extract_text", "join_text"]


def join_text(parts: Iterable[Any]) -> str:
    """SPEC ``join``: trim every part (JS whitespace), drop empties, join with ``\\n``.

    Non-string parts are dropped: upstream would fail on them, and a malformed field
    must not make a whole log unsearchable.
    """
    kept: list[str] = []
    for part in parts:
        if isinstance(part, str):
            trimmed = js_trim(part)
            if trimmed:
                kept.append(trimmed)
    return "\n".join(kept)


_DONE: Any = object()


def _append_str(out: list[str], value: Any) -> None:
    if isinstance(value, str):
        out.append(value)


def block_texts(blocks: Any) -> list[str]:
    """SPEC ``block_text`` flattened over a block list, depth first, in block order.

    Iterative so a deeply nested ``tool-result`` chain cannot exhaust the Python stack.
    Non-string ``text``/``name``/``arguments`` values are skipped.
    """
    out: list[str] = []
    if not isinstance(blocks, list):
        return out
    # Stack of iterators over block lists; nested tool-result content is pushed on top.
    stack = [iter(blocks)]
    while stack:
        block = next(stack[-1], _DONE)
        if block is _DONE:
            stack.pop()
            continue
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            _append_str(out, block.get("text"))
        elif kind == "tool-call":
            _append_str(out, block.get("name"))
            _append_str(out, block.get("arguments"))
        elif kind == "tool-result":
            nested = block.get("content")
            if isinstance(nested, list):
                stack.append(iter(nested))
        # "reasoning" is never searchable; unknown block types contribute nothing.
    return out


def content_text(blocks: Any) -> str:
    """SPEC ``content_text``: the joined text of a content block list."""
    return join_text(block_texts(blocks))


def _message_content(data: dict[str, Any]) -> Any:
    """``data.message.content``, or ``data.content`` for the older shape without ``message``."""
    if "message" in data:
        message = data["message"]
        return message.get("content") if isinstance(message, dict) else None
    return data.get("content")


def _turn_end_text(reason: Any) -> str:
    if not isinstance(reason, dict):
        return ""
    kind = reason.get("kind")
    if kind == "error":
        error = reason.get("error")
        if isinstance(error, dict):
            return join_text(["error", error.get("message")])
        # A bare string error (upstream stringifies non-Error values) reads as itself.
        return join_text(["error", error])
    if kind in ("aborted", "max-tokens", "interrupted"):
        return str(kind)
    return ""


TEXT_TYPES = frozenset(
    {"user/message", "assistant/message", "tool/result", "tool/call", "todo/write", "turn/end"}
)


def extract_text(event_type: str, data: Any) -> str:
    """The semantic text of an event of ``event_type`` with payload ``data`` (SPEC §3).

    Returns ``""`` for log-only/structural/unknown types and for malformed payloads.
    """
    if event_type not in TEXT_TYPES:  # most events (chunks, steps) carry no text
        return ""
    if event_type in (
        "user/message",
        "assistant/message",
        "tool/result",
        "tool/call",
        "todo/write",
        "turn/end",
    ) and not isinstance(data, dict):
        return ""
    if event_type == "user/message":
        return content_text(data.get("content"))
    if event_type == "assistant/message":
        return content_text(_message_content(data))
    if event_type == "tool/call":
        return join_text([data.get("name"), data.get("arguments")])
    if event_type == "tool/result":
        error = data.get("error")
        name = code = None
        if isinstance(error, dict):
            name, code = error.get("name"), error.get("code")
        return join_text([content_text(_message_content(data)), name, code])
    if event_type == "todo/write":
        todos = data.get("todos")
        parts: list[Any] = []
        if isinstance(todos, list):
            for todo in todos:
                if isinstance(todo, dict):
                    parts.append(todo.get("status"))
                    parts.append(todo.get("content"))
        return join_text(parts)
    if event_type == "turn/end":
        return _turn_end_text(data.get("reason"))
    return ""
