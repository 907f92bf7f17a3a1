"""Codex CLI rollouts: ``~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl``.

Every line is ``{"timestamp", "type", "payload"}``. The first ``session_meta`` gives the
header (``payload.id``, ``payload.cwd``, ``payload.timestamp``); a subagent's meta names
its parent thread (``payload.source.subagent.thread_spawn.parent_thread_id``, or
``payload.parent_thread_id``), which becomes ``parentSession`` with
``origin: "subagent"``; a review subagent (``source: {"subagent": "review"}``) names
none, and its parent is found by the rule of ``codex_review``. ``response_item``
payloads are the conversation: user and assistant ``message``s, ``reasoning`` (a
``reasoning`` block: not searchable), tool calls (``function_call``,
``custom_tool_call``, ``local_shell_call``, ``web_search_call``) and their outputs;
``compacted`` summaries are user messages. An ``event_msg`` ``user_message`` is a prompt
too unless it repeats the ``response_item`` user message just before it (and such a
``response_item`` after an ``event_msg`` prompt of the same text is the repeat): each
prompt is searchable once, also in rollouts (review mode) that write only the
``event_msg``. Assistant messages name ``model_provider`` of the meta and the model of
the latest ``turn_context``. Everything else (``session_meta``, ``turn_context``, the
other ``event_msg`` lines, developer messages, unknown types) is kept verbatim as a
log-only ``codex/<type>`` event. A line that is not a JSON object with a string
``type`` rejects the file.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

from indexer.logs.importers.builder import EventBuilder, import_whole
from indexer.logs.importers.codex_review import review_parent
from indexer.logs.importers.common import (
    CODEX,
    assistant_message,
    iso_ms,
    text_block,
    tool_call_block,
    tool_result_message,
    user_message,
)
from indexer.logs.reader import SessionLog
from indexer.model.header import SessionHeader

__all__ = ["CodexImporter", "read_codex"]

_TEXT_ITEMS: Final = frozenset({"input_text", "output_text", "text"})
_CALLS: Final = frozenset(
    {"function_call", "custom_tool_call", "local_shell_call", "web_search_call"}
)
_OUTPUTS: Final = frozenset({"function_call_output", "custom_tool_call_output"})
_INSTRUCTIONS: Final = ("# AGENTS.md instructions", "<")  # injected context, not a prompt


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


class _Rollout:
    """What mapping a line needs from the lines before it: the model, and the last
    prompt text of each copy (``response_item`` / ``event_msg``) since the other."""

    def __init__(self, b: EventBuilder) -> None:
        self.b = b
        self.provider = "openai"
        self.model: Any = None
        self.last_item_prompt: str | None = None
        self.last_event_prompt: str | None = None

    def assistant(self, content: list[dict[str, Any]], payload: dict[str, Any]) -> dict[str, Any]:
        line = f"line-{self.b.line}"
        return assistant_message(content, payload.get("id"), line, self.provider, self.model)

    def prompt(
        self,
        time: int | None,
        content: list[dict[str, Any]],
        origin: dict[str, Any],
        message_id: Any,
    ) -> None:
        data = {**user_message(content, message_id, f"line-{self.b.line}"), "import": origin}
        text = "\n".join(c["text"] for c in content if c.get("type") == "text")
        human = text and not text.startswith(_INSTRUCTIONS)
        self.b.add("user/message", time, data, prompt=text if human else None)

    def item(self, record: dict[str, Any], time: int | None, line: int) -> None:
        b = self.b
        payload = record.get("payload")
        if not isinstance(payload, dict):
            raise b.reject("response_item has no payload object")
        kind = payload.get("type")
        role = payload.get("role")
        origin = _origin(line, payload)
        if kind == "message" and role == "user":
            content = _texts(payload.get("content"))
            text = _joined(content)
            if self.last_event_prompt is not None and text == self.last_event_prompt:
                self.last_event_prompt = None  # the repeat of an event_msg prompt
                b.add(f"{CODEX}/response_item", time, record)
                return
            self.last_item_prompt, self.last_event_prompt = text, None
            self.prompt(time, content, origin, payload.get("id"))
        elif kind == "message" and role == "assistant":
            message = self.assistant(_texts(payload.get("content")), payload)
            b.add("assistant/message", time, {"message": message, "import": origin})
        elif kind == "reasoning":
            parts = [
                {"type": "reasoning", "text": item.get("text", "")}
                for key in ("summary", "content")
                for item in (payload.get(key) or [])
                if isinstance(item, dict) and isinstance(item.get("text"), str)
            ]
            message = self.assistant(parts, payload)
            b.add("assistant/message", time, {"message": message, "import": origin})
        elif kind in _CALLS:
            message = self.assistant([_call_block(payload)], payload)
            b.add("assistant/message", time, {"message": message, "import": origin})
        elif kind in _OUTPUTS:
            output = payload.get("output")
            if isinstance(output, dict):  # {"content": ..., "success": ...} shapes
                output = output.get("content", output.get("output"))
            message = tool_result_message(
                payload.get("call_id"), _texts(output), False, f"line-{line}"
            )
            b.add("tool/result", time, {"message": message, "import": origin})
        else:
            b.add(f"{CODEX}/response_item", time, record)

    def event(self, record: dict[str, Any], time: int | None, line: int) -> None:
        """An ``event_msg``: a ``user_message`` not repeating the prompt before it is a
        prompt; every other one is log-only."""
        payload = record.get("payload")
        message = payload.get("message") if isinstance(payload, dict) else None
        if not (
            isinstance(payload, dict)
            and payload.get("type") == "user_message"
            and isinstance(message, str)
        ):
            self.b.add(f"{CODEX}/event_msg", time, record)
            return
        if self.last_item_prompt is not None and message == self.last_item_prompt:
            self.last_item_prompt = None
            self.b.add(f"{CODEX}/event_msg", time, record)
            return
        self.last_event_prompt, self.last_item_prompt = message, None
        origin = {"agent": CODEX, "line": line, "record": "event_msg", "item": "user_message"}
        self.prompt(time, [text_block(message)], origin, None)


def _joined(content: list[dict[str, Any]]) -> str:
    return "\n".join(c["text"] for c in content if c.get("type") == "text")


def _parent(payload: dict[str, Any]) -> tuple[str | None, int | None]:
    """The parent thread a subagent rollout names, and its spawn depth."""
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


def _is_review(meta: dict[str, Any]) -> bool:
    source = meta.get("source")
    return isinstance(source, dict) and source.get("subagent") == "review"


class CodexImporter:
    """The :class:`~indexer.logs.importers.builder.Importer` of one rollout: the header
    from its first ``session_meta``."""

    def __init__(self, b: EventBuilder) -> None:
        self.b = b
        self.rollout = _Rollout(b)
        self.meta: dict[str, Any] | None = None
        self.meta_time: int | None = None
        self.first_time: int | None = None

    def units(self) -> Iterator[tuple[dict[str, Any], str]]:
        return self.b.records()

    def map(self, unit: tuple[dict[str, Any], str]) -> None:
        b, rollout = self.b, self.rollout
        record, rtype = unit
        line_no = b.line
        time = iso_ms(record.get("timestamp"))
        if self.first_time is None and time is not None:
            self.first_time = time
        payload = record.get("payload")
        if rtype == "session_meta" and self.meta is None and isinstance(payload, dict):
            self.meta = payload
            self.meta_time = iso_ms(payload.get("timestamp"))
            if self.meta_time is None:
                self.meta_time = time
            if isinstance(payload.get("model_provider"), str) and payload["model_provider"]:
                rollout.provider = payload["model_provider"]
        elif rtype == "turn_context" and isinstance(payload, dict):
            rollout.model = payload.get("model", rollout.model)
        if rtype == "response_item":
            rollout.item(record, time, line_no)
        elif rtype == "event_msg":
            rollout.event(record, time, line_no)
        elif rtype == "compacted" and isinstance(payload, dict):
            summary = payload.get("message")
            content = [text_block(summary if isinstance(summary, str) else "")]
            data = {
                **user_message(content, None, f"line-{line_no}"),
                "compactSummary": True,
                "import": {"agent": CODEX, "line": line_no, "record": "compacted"},
            }
            b.add("user/message", time, data)
        else:
            b.add(f"{CODEX}/{rtype}", time, record)

    def settled(self) -> SessionHeader | None:
        known = self.meta is not None and (self.meta_time or self.first_time) is not None
        return self.header() if known else None

    def header(self) -> SessionHeader:
        b, meta = self.b, self.meta
        sid = meta.get("id") if meta is not None else None
        if meta is None or not isinstance(sid, str) or not sid:
            raise b.reject("no session_meta line carries an id", 1)
        created = self.meta_time if self.meta_time is not None else self.first_time
        if created is None:
            raise b.reject("no line carries a timestamp", 1)
        cwd = meta.get("cwd")
        parent, depth = _parent(meta)
        if parent is None and _is_review(meta):
            parent = review_parent(b.path, sid, cwd, created)
            depth = 1 if parent is not None else None
        return SessionHeader(
            id=sid,
            createdAt=max(created, 0),
            cwd=cwd if isinstance(cwd, str) and cwd.startswith("/") else None,
            parentSession=parent,
            origin="subagent" if parent is not None else None,
            delegationDepth=depth,
            sourceAgent=CODEX,
        )


def read_codex(path: Path | str) -> SessionLog:
    """One Codex rollout as one piece (:class:`CodexImporter`)."""
    return import_whole(Path(path), CodexImporter)
