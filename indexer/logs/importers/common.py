"""What both importers share: ISO times, content blocks in the dsh shapes, and the
builder that numbers the mapped events and folds them like a dsh log.

A mapped event is a plain dsh event object (``type, seq, time, data[, surfaceOp]``):
the surface text rules (``indexer.surface.text``) then apply unchanged. Every mapped
event's ``data.import`` names where it came from (the line of the source file and the
record's own ids), so a read can be traced back to the original log.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import orjson

from indexer.errors import LogValidationError
from indexer.logs.jsonl import iter_lines
from indexer.logs.reader import LogRejectedError, SessionLog, parse_line
from indexer.model.event import SURFACE_ELIGIBLE, SessionEvent, dump_json
from indexer.model.header import SessionHeader
from indexer.surface.fold import FoldedLog, FoldStep, SurfaceFold

__all__ = ["EventBuilder", "iso_ms", "text_block", "tool_call_block", "tool_result_block"]

CLAUDE_CODE: Final = "claude-code"
CODEX: Final = "codex"
STEP_START: Final = "step/start"


def iso_ms(value: Any) -> int | None:
    """Epoch milliseconds of an ISO 8601 timestamp (``2025-06-01T12:00:00.000Z``), or
    ``None`` when ``value`` is not one."""
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    if moment.tzinfo is None:  # both agents write UTC; a naive time is read as UTC too
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def tool_call_block(call_id: Any, name: Any, arguments: Any) -> dict[str, Any]:
    """A dsh ``tool-call`` block; non-string arguments become compact JSON text (the
    searchable form dsh logs carry)."""
    if not isinstance(arguments, str):
        arguments = orjson.dumps(arguments).decode() if arguments is not None else ""
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


class EventBuilder:
    """Collects mapped events in file order; :meth:`finish` numbers them from seq 0,
    gives each its time and folds them like a dsh log.

    A record without a usable timestamp (Claude Code's ``summary``) takes the time of
    the event before it, or the session's creation time when it comes first.

    Model steps are marked as dsh marks them: a log-only ``step/start {turn, step}``
    before the first assistant event after a user message or tool result (one model
    call), the turn counted by user messages. It is the boundary a current-session event
    search stops at, so an imported session can be a caller like a dsh one.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._pending: list[tuple[str, int | None, Any]] = []
        self.line = 0
        self._turn = 0
        self._step = 0
        self._in_step = False

    def reject(self, rule: str, line: int | None = None) -> LogRejectedError:
        return LogRejectedError(self.path, line if line is not None else self.line, rule)

    def records(self) -> Iterator[tuple[dict[str, Any], str]]:
        """The file's records with their ``type``, ``line`` kept current; a line that is
        not a JSON object with a string ``type`` rejects the file (with its line)."""
        for line_no, raw in iter_lines(self.path):
            self.line = line_no
            try:
                record = parse_line(raw)
            except LogValidationError as exc:
                raise self.reject(exc.message) from exc
            if not isinstance(record, dict):
                raise self.reject("record is not a JSON object")
            rtype = record.get("type")
            if not isinstance(rtype, str) or not rtype:
                raise self.reject("record has no type")
            yield record, rtype

    def add(self, etype: str, time: int | None, data: Any) -> None:
        """Queue one event (``surfaceOp: append`` for the surface-eligible types)."""
        if etype == "user/message":
            self._turn, self._step, self._in_step = self._turn + 1, 0, False
        elif etype == "tool/result":
            self._in_step = False
        elif etype == "assistant/message" and not self._in_step:
            self._step += 1
            self._in_step = True
            step = {"turn": self._turn, "step": self._step}
            self._pending.append((STEP_START, time, step))
        self._pending.append((etype, time, data))

    def finish(self, header: SessionHeader) -> SessionLog:
        events: list[SessionEvent] = []
        fold = SurfaceFold()
        steps: list[FoldStep] = []
        last = header.created_at
        for seq, (etype, time, data) in enumerate(self._pending):
            last = time if time is not None else last
            obj: dict[str, Any] = {"type": etype, "seq": seq, "time": last, "data": data}
            if etype in SURFACE_ELIGIBLE:
                obj["surfaceOp"] = "append"
            event = SessionEvent(type=etype, seq=seq, time=last, obj=obj, raw=dump_json(obj))
            try:
                steps.append(fold.step(event, events.__getitem__))
            except LogValidationError as exc:  # a mapping bug, never the file's fault
                raise self.reject(
                    f"imported event breaks a surface rule: {exc.message}", 1
                ) from exc
            events.append(event)
        return SessionLog(path=self.path, header=header, events=events, fold=FoldedLog(steps, fold))
