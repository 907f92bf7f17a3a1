"""Codex CLI rollouts: ``~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl``.

Every line is ``{"timestamp", "type", "payload"}``. The first ``session_meta`` gives the
header (``payload.id``, ``payload.cwd``, ``payload.timestamp``); a subagent's meta names
its parent thread (``payload.source.subagent.thread_spawn.parent_thread_id``, or
``payload.parent_thread_id``), which becomes ``parentSession`` with
``origin: "subagent"``. ``response_item`` payloads are the conversation: user and
assistant ``message``s, ``reasoning`` (a ``reasoning`` block: not searchable), tool calls
(``function_call``, ``custom_tool_call``, ``local_shell_call``, ``web_search_call``) and
their outputs; ``compacted`` summaries are user messages. Everything else
(``session_meta``, ``turn_context``, ``event_msg`` — which repeats the messages —,
developer messages, unknown types) is kept verbatim as a log-only ``codex/<type>`` event.
A line that is not a JSON object with a string ``type`` rejects the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from indexer.errors import LogValidationError
from indexer.logs.importers.common import (
    CODEX,
    EventBuilder,
    iso_ms,
    text_block,
    tool_call_block,
    tool_result_block,
)
from indexer.logs.reader import LogRejectedError, SessionLog
from indexer.model.header import SessionHeader

__all__ = ["read_codex"]

_TEXT_ITEMS: Final = frozenset({"input_text", "output_text", "text"})
_CALLS: Final = frozenset(
    {"function_call", "custom_tool_call", "local_shell_call", "web_search_call"}
)
_OUTPUTS: Final = frozenset({"function_call_output", "custom_tool_call_output"})


def _texts(content: Any) -> list[dict[str, Any]]:
    """Message content items as dsh blocks: the text kinds kept, others a placeholder."""
    if isinstance(content, str):
        return [text_block(content)]
    out: list[dict[str, Any]] = []
    if isinstance(content, list):
        for item in content:
            if isinstance(item, dict) and item.get("type") in _TEXT_ITEMS:
                text = item.get("text")
                out.append(text_block(text if isinstance(text, str) else ""))
            elif isinstance(item, dict) and isinstance(item.get("type"), str):
                out.append({"type": item["type"]})
    return out


def _origin(line: int, payload: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"agent": CODEX, "line": line, "record": "response_item"}
    if isinstance(payload.get("type"), str):
        out["item"] = payload["type"]
    if isinstance(payload.get("id"), str):
        out["id"] = payload["id"]
    return out


def _call_block(payload: dict[str, Any]) -> dict[str, Any]:
    kind = payload["type"]
    call_id = payload.get("call_id", payload.get("id"))
    if kind == "function_call":
        return tool_call_block(call_id, payload.get("name"), payload.get("arguments", ""))
    if kind == "custom_tool_call":
        return tool_call_block(call_id, payload.get("name"), payload.get("input", ""))
    if kind == "local_shell_call":
        return tool_call_block(call_id, "local_shell", payload.get("action", {}))
    return tool_call_block(call_id, "web_search", payload.get("action", {}))


def _map_item(b: EventBuilder, record: dict[str, Any], time: int | None, line: int) -> None:
    payload = record.get("payload")
    if not isinstance(payload, dict):
        raise b.reject("response_item has no payload object")
    kind = payload.get("type")
    role = payload.get("role")
    origin = _origin(line, payload)
    if kind == "message" and role == "user":
        data = {
            "content": _texts(payload.get("content")),
            "role": "user",
            "source": {"kind": "user"},
        }
        b.add("user/message", time, {**data, "import": origin})
    elif kind == "message" and role == "assistant":
        message: dict[str, Any] = {"role": "assistant", "content": _texts(payload.get("content"))}
        b.add("assistant/message", time, {"message": message, "import": origin})
    elif kind == "reasoning":
        parts = [
            {"type": "reasoning", "text": item.get("text", "")}
            for key in ("summary", "content")
            for item in (payload.get(key) or [])
            if isinstance(item, dict) and isinstance(item.get("text"), str)
        ]
        message = {"role": "assistant", "content": parts}
        b.add("assistant/message", time, {"message": message, "import": origin})
    elif kind in _CALLS:
        message = {"role": "assistant", "content": [_call_block(payload)]}
        b.add("assistant/message", time, {"message": message, "import": origin})
    elif kind in _OUTPUTS:
        output = payload.get("output")
        if isinstance(output, dict):  # {"content": ..., "success": ...} shapes
            output = output.get("content", output.get("output"))
        result = tool_result_block(payload.get("call_id"), _texts(output), False)
        message = {
            "role": "user",
            "content": [result],
            "source": {"kind": "tool", "callId": result["toolCallId"]},
        }
        b.add("tool/result", time, {"message": message, "import": origin})
    else:
        b.add(f"{CODEX}/response_item", time, record)


def _parent(payload: dict[str, Any]) -> tuple[str | None, int | None]:
    """The parent thread of a subagent rollout, and its spawn depth."""
    source = payload.get("source")
    spawn: Any = None
    if isinstance(source, dict) and isinstance(source.get("subagent"), dict):
        spawn = source["subagent"].get("thread_spawn")
    parent = payload.get("parent_thread_id")
    depth: Any = None
    if isinstance(spawn, dict):
        parent = spawn.get("parent_thread_id", parent)
        depth = spawn.get("depth")
    if not isinstance(parent, str) or not parent:
        return None, None
    return parent, depth if type(depth) is int and depth >= 0 else 1


def read_codex(path: Path | str) -> SessionLog:
    """Read one Codex rollout into a session log; raises :class:`LogRejectedError`
    (``<path>:<line>: <why>``) for a broken line and for a rollout without a
    ``session_meta`` id."""
    path = Path(path)
    b = EventBuilder(path)
    meta: dict[str, Any] | None = None
    meta_time: int | None = None
    first_time: int | None = None
    try:
        for record, rtype in b.records():
            line_no = b.line
            time = iso_ms(record.get("timestamp"))
            if first_time is None and time is not None:
                first_time = time
            payload = record.get("payload")
            if rtype == "session_meta" and meta is None and isinstance(payload, dict):
                meta = payload
                meta_time = iso_ms(payload.get("timestamp"))
                if meta_time is None:
                    meta_time = time
            if rtype == "response_item":
                _map_item(b, record, time, line_no)
            elif rtype == "compacted" and isinstance(payload, dict):
                summary = payload.get("message")
                data = {
                    "content": [text_block(summary if isinstance(summary, str) else "")],
                    "role": "user",
                    "source": {"kind": "user"},
                    "compactSummary": True,
                    "import": {"agent": CODEX, "line": line_no, "record": "compacted"},
                }
                b.add("user/message", time, data)
            else:
                b.add(f"{CODEX}/{rtype}", time, record)
    except LogRejectedError:
        raise
    except LogValidationError as exc:
        raise b.reject(exc.message, exc.line) from exc
    sid = meta.get("id") if meta is not None else None
    if not isinstance(sid, str) or not sid:
        raise b.reject("no session_meta line carries an id", 1)
    assert meta is not None
    created = meta_time if meta_time is not None else first_time
    if created is None:
        raise b.reject("no line carries a timestamp", 1)
    cwd = meta.get("cwd")
    parent, depth = _parent(meta)
    header = SessionHeader(
        id=sid,
        createdAt=max(created, 0),
        cwd=cwd if isinstance(cwd, str) and cwd.startswith("/") else None,
        parentSession=parent,
        origin="subagent" if parent is not None else None,
        delegationDepth=depth,
        sourceAgent=CODEX,
    )
    return b.finish(header)
