"""What the importers share: ISO times, content blocks and messages in the dsh shapes,
and subagent ids (``indexer.logs.importers.builder`` numbers and folds the events).

A mapped event is a plain dsh event object (``type, seq, time, data[, surfaceOp]``):
the surface text rules (``indexer.surface.text``) then apply unchanged. Every mapped
event's ``data.import`` names where it came from (the line of the source file and the
record's own ids), so a read can be traced back to the original log.

Round trip: every event the builder emits is one ``session_event_read`` can print. The
read path's rule is the event model's (SPEC §1.3: an identified message, its role, a
source kind, a model source on assistant messages, one matching ``tool-result`` block
on tool results; ``indexer.model.shapes``), and dsh logs must keep meeting it
unchanged, so the importers make events that satisfy it rather than the read path
bending for them.
"""

from __future__ import annotations

import hashlib
import uuid
from datetime import UTC, datetime
from typing import Any, Final

from indexer.model.event import json_text

__all__ = [
    "AGENTS",
    "assistant_message",
    "child_session_id",
    "iso_ms",
    "name_uuid",
    "safe_name",
    "text_block",
    "tool_call_block",
    "tool_result_block",
    "tool_result_message",
    "user_message",
]

CLAUDE_CODE: Final = "claude-code"
CODEX: Final = "codex"
GEMINI_CLI: Final = "gemini-cli"
QWEN_CODE: Final = "qwen-code"
OPENCODE: Final = "opencode"
COPILOT_CLI: Final = "copilot-cli"
AIDER: Final = "aider"
AGENTS: Final = ("dsh", CLAUDE_CODE, CODEX, GEMINI_CLI, QWEN_CODE, OPENCODE, COPILOT_CLI, AIDER)
"""Every ``sourceAgent`` an importer writes, and ``dsh`` (no tag), in display order."""
UNKNOWN_MODEL: Final = "unknown"
"""The model named in an assistant message's source when the log names none."""

_SUBAGENT_NAMESPACE: Final = uuid.uuid5(uuid.NAMESPACE_URL, "sessionq:subagent")


def name_uuid(namespace: uuid.UUID, *parts: str) -> str:
    """A name-based UUID (version 5) of ``parts`` in ``namespace``: ``uuid.uuid5``'s,
    for any strings (a lone surrogate included)."""
    name = "\x00".join(parts).encode("utf-8", "surrogatepass")
    digest = hashlib.sha1(namespace.bytes + name, usedforsecurity=False).digest()
    return str(uuid.UUID(bytes=digest[:16], version=5))


def child_session_id(parent: str, agent_id: str) -> str:
    """The id of a subagent the agent names only by its parent and its own agent id:
    a name-based UUID (version 5) of both, so it holds no other session's id (a parent
    in another workspace is never shown through its child) and a re-import gives the
    same id."""
    return name_uuid(_SUBAGENT_NAMESPACE, parent, agent_id)


def iso_ms(value: Any) -> int | None:
    """Epoch milliseconds of an ISO 8601 timestamp (``2025-06-01T12:00:00.000Z``), or
    ``None`` when ``value`` is not one."""
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = datetime.fromisoformat(value)
        if moment.tzinfo is None:  # the agents write UTC; a naive time is read as UTC too
            moment = moment.replace(tzinfo=UTC)
        return int(moment.timestamp() * 1000)
    except (ValueError, OverflowError):  # not a time, or one no epoch count holds
        return None


def safe_name(value: Any) -> str | None:
    """``value`` when it can name one file of a directory the log's own layout spells
    (an OpenCode session or message id): a non-empty string without a path separator,
    NUL or lone surrogate, not ``.``/``..``, at most 255 bytes; else ``None``. An id
    from a log never reaches the file system otherwise."""
    if not isinstance(value, str) or value in ("", ".", "..") or "/" in value or "\x00" in value:
        return None
    try:
        return value if len(value.encode()) <= 255 else None
    except UnicodeEncodeError:
        return None


def text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def tool_call_block(call_id: Any, name: Any, arguments: Any) -> dict[str, Any]:
    """A dsh ``tool-call`` block; non-string arguments become compact JSON text (the
    searchable form dsh logs carry)."""
    if not isinstance(arguments, str):
        arguments = json_text(arguments) if arguments is not None else ""
    return {
        "type": "tool-call",
        "id": call_id if isinstance(call_id, str) else "",
        "name": name if isinstance(name, str) else "",
        "arguments": arguments,
    }


def tool_result_block(
    call_id: Any, content: list[dict[str, Any]], is_error: bool
) -> dict[str, Any]:
    return {
        "type": "tool-result",
        "toolCallId": call_id if isinstance(call_id, str) else "",
        "content": content,
        "isError": is_error,
    }


def _some_id(value: Any, fallback: str) -> str:
    return value if isinstance(value, str) and value else fallback


def user_message(
    content: list[dict[str, Any]], message_id: Any, fallback_id: str
) -> dict[str, Any]:
    """A dsh ``UserMessage`` (the ``data`` of ``user/message``); ``fallback_id`` (e.g.
    ``line-12``) when the log gives the message no id of its own."""
    return {
        "content": content,
        "role": "user",
        "id": _some_id(message_id, fallback_id),
        "source": {"kind": "user"},
    }


def assistant_message(
    content: list[dict[str, Any]], message_id: Any, fallback_id: str, provider: str, model: Any
) -> dict[str, Any]:
    """A dsh ``AssistantMessage``; the model is ``unknown`` when the log names none."""
    return {
        "role": "assistant",
        "content": content,
        "id": _some_id(message_id, fallback_id),
        "source": {
            "kind": "model",
            "provider": provider,
            "model": model if isinstance(model, str) and model else UNKNOWN_MODEL,
        },
    }


def tool_result_message(
    call_id: Any, content: list[dict[str, Any]], is_error: bool, fallback_id: str
) -> dict[str, Any]:
    """A dsh ``ToolResultMessage`` holding one ``tool-result`` block. A result the log
    names no call for gets ``fallback_id`` as its call id (the shape needs one)."""
    call = _some_id(call_id, fallback_id)
    return {
        "role": "user",
        "content": [tool_result_block(call, content, is_error)],
        "id": f"result:{call}",
        "source": {"kind": "tool", "callId": call},
    }
