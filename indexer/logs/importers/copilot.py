"""GitHub Copilot CLI sessions: ``~/.copilot/session-state/<session id>/events.jsonl``
(with ``workspace.yaml`` beside it), and the older ``~/.copilot/session-state/<id>.jsonl``.

Every line is an event ``{type, data, id, timestamp, parentId}``. ``session.start``
gives the header (``data.sessionId``, ``data.startTime``, ``data.context.cwd``; else the
``cwd:`` of ``workspace.yaml``). Mapped, in file order: ``user.message`` →
``user/message`` (``data.content``); ``assistant.message`` → ``assistant/message``
(``reasoningText`` as ``reasoning``, ``content`` as text, each of ``toolRequests`` as a
``tool-call`` block; the model is ``data.model`` or the latest
``session.model_change``); ``tool.execution_complete`` → ``tool/result``
(``result.content``, or the error's message, ``isError`` when ``success`` is false);
``tool.execution_start`` of a call no assistant message requested → an
``assistant/message`` with that call. Every other event (``session.*``,
``assistant.turn_*``, ``tool.execution_start`` of a requested call, deltas, future
types) → log-only ``copilot-cli/<type>``, verbatim.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

from indexer.logs.files import open_regular
from indexer.logs.importers.builder import EventBuilder, import_whole
from indexer.logs.importers.common import (
    COPILOT_CLI,
    assistant_message,
    iso_ms,
    text_block,
    tool_call_block,
    tool_result_message,
    user_message,
)
from indexer.logs.reader import SessionLog
from indexer.model.header import SessionHeader

__all__ = ["COPILOT_EVENT_TYPES", "CopilotImporter", "read_copilot"]

COPILOT_EVENT_TYPES: Final = frozenset(
    {
        "session.start",
        "session.info",
        "session.model_change",
        "user.message",
        "assistant.message",
        "assistant.turn_start",
        "tool.execution_start",
    }
)
_PROVIDER: Final = "github-copilot"


def _workspace_cwd(path: Path) -> str | None:
    """``cwd:`` of the ``workspace.yaml`` beside ``events.jsonl`` (flat ``key: value``
    lines; no YAML parser is needed for one scalar)."""
    try:
        with open_regular(path.with_name("workspace.yaml")) as f:
            text = f.read(1 << 16).decode(errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() == "cwd":
            return value.strip().strip("'\"") or None
    return None


class _Events:
    def __init__(self, b: EventBuilder) -> None:
        self.b = b
        self.model: Any = None
        self.requested: set[str] = set()
        self.start: dict[str, Any] | None = None

    def origin(self, record: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {"agent": COPILOT_CLI, "line": self.b.line, "record": record["type"]}
        for key in ("id", "parentId"):
            if isinstance(record.get(key), str):
                out[key] = record[key]
        return out

    def map(self, record: dict[str, Any], kind: str) -> None:
        b = self.b
        raw = record.get("data")
        data: dict[str, Any] = raw if isinstance(raw, dict) else {}
        time = iso_ms(record.get("timestamp"))
        fallback = f"line-{b.line}"
        if kind == "session.start" and self.start is None:
            self.start = data
        elif kind == "session.model_change" and isinstance(data.get("newModel"), str):
            self.model = data["newModel"]
        if kind == "user.message" and isinstance(data.get("content"), str):
            content = [text_block(data["content"])]
            message = {
                **user_message(content, record.get("id"), fallback),
                "import": self.origin(record),
            }
            b.add("user/message", time, message, prompt=data["content"])
        elif kind == "assistant.message":
            blocks: list[dict[str, Any]] = []
            if isinstance(data.get("reasoningText"), str) and data["reasoningText"]:
                blocks.append({"type": "reasoning", "text": data["reasoningText"]})
            if isinstance(data.get("content"), str) and data["content"]:
                blocks.append(text_block(data["content"]))
            for call in data.get("toolRequests") or []:
                if isinstance(call, dict):
                    if isinstance(call.get("toolCallId"), str):
                        self.requested.add(call["toolCallId"])
                    blocks.append(
                        tool_call_block(
                            call.get("toolCallId"), call.get("name"), call.get("arguments", {})
                        )
                    )
            mid = data.get("messageId", record.get("id"))
            out = assistant_message(
                blocks, mid, fallback, _PROVIDER, data.get("model") or self.model
            )
            b.add("assistant/message", time, {"message": out, "import": self.origin(record)})
        elif kind == "tool.execution_start" and data.get("toolCallId") not in self.requested:
            call = tool_call_block(
                data.get("toolCallId"), data.get("toolName"), data.get("arguments", {})
            )
            out = assistant_message([call], record.get("id"), fallback, _PROVIDER, self.model)
            b.add("assistant/message", time, {"message": out, "import": self.origin(record)})
        elif kind == "tool.execution_complete":
            result = data.get("result")
            error = data.get("error")
            text = result.get("content") if isinstance(result, dict) else result
            if not isinstance(text, str):
                text = error.get("message") if isinstance(error, dict) else error
            failed = data.get("success") is False
            content = [text_block(text if isinstance(text, str) else "")]
            out = tool_result_message(data.get("toolCallId"), content, failed, fallback)
            b.add("tool/result", time, {"message": out, "import": self.origin(record)})
        else:
            b.add(f"{COPILOT_CLI}/{kind}", time, record)


class CopilotImporter:
    """The :class:`~indexer.logs.importers.builder.Importer` of one event log: the
    header from its first ``session.start``."""

    def __init__(self, b: EventBuilder) -> None:
        self.b = b
        self.events = _Events(b)

    def units(self) -> Iterator[tuple[dict[str, Any], str]]:
        return self.b.records()

    def map(self, unit: tuple[dict[str, Any], str]) -> None:
        self.events.map(*unit)

    def _created(self) -> int | None:
        start = self.events.start or {}
        return iso_ms(start.get("startTime")) or self.b.first_time

    def settled(self) -> SessionHeader | None:
        known = self.events.start is not None and self._created() is not None
        return self.header() if known else None

    def header(self) -> SessionHeader:
        b, path = self.b, self.b.path
        start = self.events.start or {}
        sid = start.get("sessionId")
        if not isinstance(sid, str) or not sid:
            raise b.reject("no session.start event carries a sessionId", 1)
        created = self._created()
        if created is None:
            raise b.reject("no event carries a timestamp", 1)
        context = start.get("context")
        cwd = context.get("cwd") if isinstance(context, dict) else None
        if not isinstance(cwd, str) and path.name == "events.jsonl":
            cwd = _workspace_cwd(path)
        return SessionHeader(
            id=sid,
            createdAt=max(created, 0),
            cwd=cwd if isinstance(cwd, str) and cwd.startswith("/") else None,
            sourceAgent=COPILOT_CLI,
        )


def read_copilot(path: Path | str) -> SessionLog:
    """One Copilot CLI event log as one piece (:class:`CopilotImporter`)."""
    return import_whole(Path(path), CopilotImporter)
