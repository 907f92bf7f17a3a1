"""Claude Code transcripts: ``~/.claude/projects/<encoded cwd>/<session>.jsonl`` and the
subagent transcripts beside them (``<session>/subagents/agent-<id>.jsonl``, and the
older ``agent-<id>.jsonl`` in the project directory).

One file is one session. A subagent file — named ``agent-<id>.jsonl``, or whose first
conversation record says ``isSidechain: true`` with an ``agentId`` (a transcript copied
out of its layout) — becomes a child session: its id is
``child_session_id(<parent id>, <agent id>)`` (a name-based UUID: no other session's id
inside it), its parent the ``sessionId`` its records carry (the parent session's id),
``origin: "subagent"``. Records are mapped in file
order (``docs/importers.md`` has the table): ``user`` -> ``user/message`` plus one
``tool/result`` per ``tool_result`` block, ``assistant`` -> ``assistant/message``
(``thinking`` as a ``reasoning`` block, ``tool_use`` as a ``tool-call`` block),
``summary`` -> ``session/title``; every other record type is kept verbatim as a
log-only ``claude-code/<type>`` event. A line that is not a JSON object with a string
``type`` rejects the file (``<path>:<line>: <why>``), as a broken dsh line does.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import orjson

from indexer.logs.files import open_regular
from indexer.logs.importers.builder import EventBuilder, import_whole
from indexer.logs.importers.common import (
    CLAUDE_CODE,
    assistant_message,
    child_session_id,
    iso_ms,
    text_block,
    tool_call_block,
    tool_result_message,
    user_message,
)
from indexer.logs.reader import NoConversationError, SessionLog
from indexer.model.header import SessionHeader

__all__ = ["CLAUDE_RECORD_TYPES", "ClaudeCodeImporter", "read_claude_code", "subagent_of"]

CLAUDE_RECORD_TYPES: Final = frozenset(
    {"user", "assistant", "summary", "system", "file-history-snapshot", "queue-operation"}
)
_SIDE_RECORDS: Final = frozenset({"summary", "file-history-snapshot"})
_META_BYTES: Final = 1 << 16
_IMPORT_KEYS: Final = ("uuid", "parentUuid", "isSidechain", "agentId", "isMeta", "requestId")


def subagent_of(path: Path) -> str | None:
    """The agent id a subagent file's name gives (``agent-<id>.jsonl``), else ``None``."""
    name = path.name
    if name.startswith("agent-") and name.endswith(".jsonl"):
        return name.removeprefix("agent-").removesuffix(".jsonl") or None
    return None


def _blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [text_block(content)]
    return content if isinstance(content, list) else []


def _result_content(content: Any) -> list[dict[str, Any]]:
    """A ``tool_result``'s content as dsh blocks: text kept, images and documents kept
    as a bare ``{"type": ...}`` placeholder (their data is not imported)."""
    out: list[dict[str, Any]] = []
    for block in _blocks(content):
        if isinstance(block, dict) and block.get("type") == "text":
            text = block.get("text")
            out.append(text_block(text if isinstance(text, str) else ""))
        elif isinstance(block, dict) and isinstance(block.get("type"), str):
            out.append({"type": block["type"]})
    return out


def _assistant_block(block: Any) -> dict[str, Any] | None:
    if not isinstance(block, dict):
        return None
    kind = block.get("type")
    if kind == "text":
        text = block.get("text")
        return text_block(text if isinstance(text, str) else "")
    if kind == "thinking":
        thinking = block.get("thinking")
        return {"type": "reasoning", "text": thinking if isinstance(thinking, str) else ""}
    if kind == "redacted_thinking":
        return {"type": "reasoning", "text": "", "redacted": True}
    if kind in ("tool_use", "server_tool_use"):
        return tool_call_block(block.get("id"), block.get("name"), block.get("input", {}))
    return {"type": kind} if isinstance(kind, str) else None


def _origin(record: dict[str, Any], line: int) -> dict[str, Any]:
    out: dict[str, Any] = {"agent": CLAUDE_CODE, "line": line, "record": record["type"]}
    for key in _IMPORT_KEYS:
        if key in record:
            out[key] = record[key]
    return out


def _map_user(b: EventBuilder, record: dict[str, Any], time: int | None, line: int) -> None:
    message = record.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    kept: list[dict[str, Any]] = []
    for block in _blocks(content):
        if not isinstance(block, dict):
            continue
        if block.get("type") == "tool_result":
            message = tool_result_message(
                block.get("tool_use_id"),
                _result_content(block.get("content")),
                block.get("is_error") is True,
                f"line-{line}",
            )
            b.add("tool/result", time, {"message": message, "import": _origin(record, line)})
        elif block.get("type") == "text":
            text = block.get("text")
            kept.append(text_block(text if isinstance(text, str) else ""))
        elif isinstance(block.get("type"), str):
            kept.append({"type": block["type"]})
    if kept or not isinstance(content, list) or not content:
        data = user_message(kept, record.get("uuid"), f"line-{line}")
        summary = record.get("isCompactSummary") is True
        if summary:
            data["compactSummary"] = True
        data["import"] = _origin(record, line)
        texts = [k["text"] for k in kept if k.get("type") == "text"]
        human = texts and not summary and record.get("isMeta") is not True
        b.add("user/message", time, data, prompt="\n".join(texts) if human else None)


def _map_assistant(b: EventBuilder, record: dict[str, Any], time: int | None, line: int) -> None:
    message = record.get("message")
    if not isinstance(message, dict):
        message = {}
    blocks = [m for m in map(_assistant_block, _blocks(message.get("content"))) if m is not None]
    mid = message.get("id")
    out = assistant_message(
        blocks,
        mid if isinstance(mid, str) else record.get("uuid"),
        f"line-{line}",
        "anthropic",
        message.get("model"),
    )
    b.add("assistant/message", time, {"message": out, "import": _origin(record, line)})


def _map_summary(b: EventBuilder, record: dict[str, Any], line: int) -> None:
    summary = record.get("summary")
    if not isinstance(summary, str):
        raise b.reject("summary record has no summary text", line)
    data: dict[str, Any] = {
        "title": summary,
        "messageSeqs": [],
        "source": {"kind": "provider", "provider": "anthropic"},
        "import": {"agent": CLAUDE_CODE, "line": line, "record": "summary"},
    }
    if "leafUuid" in record:
        data["import"]["leafUuid"] = record["leafUuid"]
    b.add("session/title", None, data)


def _subagent_meta(path: Path) -> dict[str, Any]:
    """The ``agent-<id>.meta.json`` sidecar (``agentType``, ``spawnDepth``), if any."""
    meta = path.with_name(path.name.removesuffix(".jsonl") + ".meta.json")
    try:
        with open_regular(meta) as f:
            obj = orjson.loads(f.read(_META_BYTES))
    except (OSError, orjson.JSONDecodeError):
        return {}
    return obj if isinstance(obj, dict) else {}


_ENCODED: Final = re.compile(r"[^A-Za-z0-9]")
_LONG_NAME: Final = 200  # Claude Code cuts a longer project name and appends a hash


def _project_dir(path: Path, subagent: bool) -> str | None:
    """The project directory a transcript lies in, when it lies in Claude Code's layout
    (``<project>/<session>.jsonl``, ``<project>/agent-<id>.jsonl``,
    ``<project>/<session>/subagents/agent-<id>.jsonl``): a name that encodes an absolute
    path starts with ``-``. ``None`` for a file elsewhere (a copy given by name)."""
    parent = path.parent
    if subagent and parent.name == "subagents":
        parent = parent.parent.parent
    name = parent.name
    return name if name.startswith("-") and len(name) > 1 else None


def _in_project(cwd: str, project: str) -> bool:
    """Whether ``cwd`` is the project's path or under it: some ancestor-or-self of
    ``cwd`` (cut at a ``/``) encodes, as Claude Code names project directories (every
    character but an ASCII letter or digit becomes ``-``), to ``project``. A log placed
    in one project that claims another's cwd is not taken into that workspace."""
    parts = cwd.rstrip("/").split("/")
    for end in range(len(parts), 0, -1):
        encoded = _ENCODED.sub("-", "/".join(parts[:end]) or "/")
        if encoded == project or (
            len(project) >= _LONG_NAME and encoded[:_LONG_NAME] == project[:_LONG_NAME]
        ):
            return True
    return False


def _parent_from_layout(path: Path) -> str | None:
    """``<parent session>/subagents/agent-<id>.jsonl`` names the parent in its path."""
    if path.parent.name == "subagents":
        return path.parent.parent.name or None
    return None


class ClaudeCodeImporter:
    """The :class:`~indexer.logs.importers.builder.Importer` of one transcript: each
    record mapped in file order, the header from the first record giving each field."""

    def __init__(self, b: EventBuilder) -> None:
        self.b = b
        self.session_id: str | None = None
        self.agent_id = subagent_of(b.path)
        self.sidechain: bool | None = None  # the first conversation record's isSidechain
        self.cwd: str | None = None
        self.created: int | None = None
        self.kinds: set[str] = set()

    def units(self) -> Iterator[tuple[dict[str, Any], str]]:
        return self.b.records()

    def map(self, unit: tuple[dict[str, Any], str]) -> None:
        b = self.b
        record, rtype = unit
        line_no = b.line
        if self.session_id is None and isinstance(record.get("sessionId"), str):
            self.session_id = record["sessionId"]
        if self.cwd is None and isinstance(record.get("cwd"), str):
            self.cwd = record["cwd"]
        self.kinds.add(rtype)
        if self.sidechain is None and rtype in ("user", "assistant"):
            self.sidechain = record.get("isSidechain") is True
            agent = record.get("agentId")
            if self.sidechain and self.agent_id is None and isinstance(agent, str):
                self.agent_id = agent or None
        time = iso_ms(record.get("timestamp"))
        if self.created is None and time is not None:
            self.created = time
        if rtype == "user":
            _map_user(b, record, time, line_no)
        elif rtype == "assistant":
            _map_assistant(b, record, time, line_no)
        elif rtype == "summary":
            _map_summary(b, record, line_no)
        else:
            b.add(f"{CLAUDE_CODE}/{rtype}", time, record)

    def settled(self) -> SessionHeader | None:
        known = (self.session_id, self.cwd, self.created, self.sidechain)
        return None if None in known else self.header()

    def header(self) -> SessionHeader:
        b, session_id = self.b, self.session_id
        if session_id is None and self.agent_id is not None:
            session_id = _parent_from_layout(b.path)
        if session_id is None and self.kinds and self.kinds <= _SIDE_RECORDS:
            # Claude Code leaves files of resume summaries / file snapshots beside sessions.
            listed = ", ".join(sorted(self.kinds))
            raise NoConversationError(
                b.path, 1, f"no conversation: only {listed} records, none carries a sessionId"
            )
        if session_id is None:
            raise b.reject("no record carries a sessionId", 1)
        if self.created is None:
            raise b.reject("no record carries a timestamp", 1)
        project = _project_dir(b.path, self.agent_id is not None)
        if project is not None and self.cwd is not None and not _in_project(self.cwd, project):
            raise b.reject(
                f"cwd {self.cwd} is not under the project directory the log lies in"
                f" ({project}): Claude Code names that directory after the cwd",
                1,
            )
        return _header(b.path, session_id, self.agent_id, self.cwd, self.created)


def read_claude_code(path: Path | str) -> SessionLog:
    """One Claude Code transcript as one piece (:class:`ClaudeCodeImporter`)."""
    return import_whole(Path(path), ClaudeCodeImporter)


def _header(
    path: Path, session_id: str, agent_id: str | None, cwd: str | None, created: int
) -> SessionHeader:
    absolute = cwd if cwd is not None and cwd.startswith("/") else None
    if agent_id is None:
        return SessionHeader(
            id=session_id, createdAt=max(created, 0), cwd=absolute, sourceAgent=CLAUDE_CODE
        )
    meta = _subagent_meta(path)
    depth = meta.get("spawnDepth")
    preset = meta.get("agentType")
    return SessionHeader(
        id=child_session_id(session_id, agent_id),
        createdAt=max(created, 0),
        cwd=absolute,
        parentSession=session_id,
        origin="subagent",
        delegationDepth=depth if type(depth) is int and depth >= 0 else 1,
        agentPreset=preset if isinstance(preset, str) else None,
        sourceAgent=CLAUDE_CODE,
    )
