"""What the importers share: ISO times, content blocks and messages in the dsh shapes,
subagent ids, and the builder that numbers the mapped events and folds them like a dsh
log.

A mapped event is a plain dsh event object (``type, seq, time, data[, surfaceOp]``):
the surface text rules (``indexer.surface.text``) then apply unchanged. Every mapped
event's ``data.import`` names where it came from (the line of the source file and the
record's own ids), so a read can be traced back to the original log.

Round trip: every event the builder emits is one ``session_event_read`` can print. The
read path's rule is the event model's (SPEC §1.3: an identified message, its role, a
source kind, a model source on assistant messages, one matching ``tool-result`` block
on tool results; ``indexer.model.shapes``), and dsh logs must keep meeting it
unchanged, so the importers make events that satisfy it rather than the read path
bending for them: the builder checks each event against that one copy of the rule
and against the nesting bound of log lines (``MAX_LOG_NESTING``), and a mapping that
would break either rejects the file with the source line, never stores an event that
cannot be read.

Mapping is prefix-stable: the events of a file's first N records never depend on what
follows them, so a live log that grows is re-read into the same events plus new ones
(the store drops the identical prefix).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import orjson

from indexer.errors import LogValidationError
from indexer.logs.jsonl import iter_lines
from indexer.logs.reader import MAX_LOG_NESTING, LogRejectedError, SessionLog, parse_line
from indexer.model.event import SURFACE_ELIGIBLE, SessionEvent, dump_json
from indexer.model.header import SessionHeader
from indexer.model.records import nesting_exceeds
from indexer.model.shapes import EventShapeError, check_message_shape
from indexer.surface.fold import FoldedLog, FoldStep, SurfaceFold

__all__ = [
    "AGENTS",
    "EventBuilder",
    "assistant_message",
    "child_session_id",
    "fallback_title",
    "iso_ms",
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
AGENTS: Final = ("dsh", CLAUDE_CODE, CODEX, GEMINI_CLI, QWEN_CODE, OPENCODE, COPILOT_CLI)
"""Every ``sourceAgent`` an importer writes, and ``dsh`` (no tag), in display order."""
STEP_START: Final = "step/start"
UNKNOWN_MODEL: Final = "unknown"
"""The model named in an assistant message's source when the log names none."""

_SUBAGENT_NAMESPACE: Final = uuid.uuid5(uuid.NAMESPACE_URL, "sessionq:subagent")
_TITLE_WORDS: Final = 5
_TITLE_BYTES: Final = 40
_WRAPPER: Final = re.compile(r"\s*<[A-Za-z_][\w-]*>")  # an injected context block
_CONTROLS: Final = re.compile(r"[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def child_session_id(parent: str, agent_id: str) -> str:
    """The id of a subagent the agent names only by its parent and its own agent id:
    a name-based UUID (version 5) of both, so it holds no other session's id (a parent
    in another workspace is never shown through its child) and a re-import gives the
    same id."""
    return str(uuid.uuid5(_SUBAGENT_NAMESPACE, f"{parent}\x00{agent_id}"))


def fallback_title(text: str) -> str | None:
    """The title dsh's title service gives a first prompt (SPEC §4, ``fallback``): the
    text cleaned of control and bidi characters, whitespace collapsed, its first five
    words, at most 40 UTF-8 bytes; ``None`` for an empty text or one that opens with a
    tag (``<environment_context>``, ``<command-name>``: context the agent injected)."""
    if _WRAPPER.match(text):
        return None
    words = _CONTROLS.sub(" ", text).split()[:_TITLE_WORDS]
    title = " ".join(words).encode()[:_TITLE_BYTES].decode(errors="ignore").rstrip()
    return title or None


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


class EventBuilder:
    """Collects mapped events in file order; :meth:`finish` numbers them from seq 0,
    gives each its time and folds them like a dsh log.

    A record without a usable timestamp (Claude Code's ``summary``) takes the time of
    the event before it, or the session's creation time when it comes first.

    Model steps are marked as dsh marks them: a log-only ``step/start {turn, step}``
    before the first assistant event after a user message or tool result (one model
    call), the turn counted by user messages. It is the boundary a current-session event
    search stops at, so an imported session can be a caller like a dsh one.

    Titles: a log's own title record is a ``session/title`` event where it stands; a
    log with none before its first prompt gets dsh's ``fallback`` title of that prompt
    (:func:`fallback_title`) right after it. A later title event wins (the title fold
    takes the last one), and neither depends on later lines.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._pending: list[tuple[str, int | None, Any, int]] = []
        self.line = 0
        self._turn = 0
        self._step = 0
        self._in_step = False
        self._titled = False

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

    def add(self, etype: str, time: int | None, data: Any, *, prompt: str | None = None) -> None:
        """Queue one event (``surfaceOp: append`` for the surface-eligible types).
        ``prompt``: the text of a human prompt (a ``user/message`` a title may come from)."""
        line = self.line
        if etype == "user/message":
            self._turn, self._step, self._in_step = self._turn + 1, 0, False
        elif etype == "tool/result":
            self._in_step = False
        elif etype == "assistant/message" and not self._in_step:
            self._step += 1
            self._in_step = True
            step = {"turn": self._turn, "step": self._step}
            self._pending.append((STEP_START, time, step, line))
        elif etype == "session/title":
            self._titled = True
        self._pending.append((etype, time, data, line))
        if prompt is not None and not self._titled:
            title = fallback_title(prompt)
            if title is not None:
                self._titled = True
                seq = len(self._pending) - 1
                fallback = {"title": title, "messageSeqs": [seq], "source": {"kind": "fallback"}}
                self._pending.append(("session/title", time, fallback, line))

    def first_time(self) -> int | None:
        """The time of the first queued event that has one."""
        return next((t for _e, t, _d, _l in self._pending if t is not None), None)

    def finish(self, header: SessionHeader) -> SessionLog:
        events: list[SessionEvent] = []
        fold = SurfaceFold()
        steps: list[FoldStep] = []
        last = header.created_at
        for seq, (etype, time, data, line) in enumerate(self._pending):
            last = time if time is not None else last
            obj: dict[str, Any] = {"type": etype, "seq": seq, "time": last, "data": data}
            if etype in SURFACE_ELIGIBLE:
                obj["surfaceOp"] = "append"
            if nesting_exceeds(obj, MAX_LOG_NESTING):
                raise self.reject(f"record is nested deeper than {MAX_LOG_NESTING} levels", line)
            event = SessionEvent(type=etype, seq=seq, time=last, obj=obj, raw=dump_json(obj))
            try:
                check_message_shape(event)
                steps.append(fold.step(event, events.__getitem__))
            except (LogValidationError, EventShapeError) as exc:  # a mapping bug
                why = f"imported event breaks a read rule: {exc.message}"
                raise self.reject(why, line) from exc
            events.append(event)
        return SessionLog(path=self.path, header=header, events=events, fold=FoldedLog(steps, fold))
