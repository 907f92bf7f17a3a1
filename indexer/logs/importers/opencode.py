"""OpenCode sessions: ``~/.local/share/opencode/storage/`` (OpenCode's JSON storage).

One session is spread over files, each one JSON document:

* ``session/<project id>/<session id>.json``: ``{id, projectID, directory, parentID?,
  title, time: {created, updated}}`` — the file a session is discovered by;
* ``message/<session id>/<message id>.json``: ``{id, sessionID, role, time: {created},
  modelID?, providerID?, model?: {providerID, modelID}, ...}``;
* ``part/<message id>/<part id>.json``: ``{id, messageID, type, ...}``: ``text``
  (``text``, ``synthetic?``), ``reasoning`` (``text``), ``tool`` (``callID``, ``tool``,
  ``state: {status, input, output?, error?}``), ``file``, ``step-start``,
  ``step-finish``, ``patch``, ``snapshot``, ``agent``, ``subtask``, ``compaction``, ….

Messages are read in ``(time.created, id)`` order, parts by id (OpenCode's ids ascend).
A user message → ``user/message`` (text parts; other parts a placeholder); an assistant
message → one ``assistant/message`` (text, ``reasoning``, one ``tool-call`` per tool
part) then one ``tool/result`` per tool part whose state is ``completed`` (``output``)
or ``error`` (``error``); the remaining parts (steps, patches, snapshots, …) →
log-only ``opencode/<part type>`` events, verbatim. ``parentID`` (a task subagent's
session) is ``parentSession`` with ``origin: "subagent"``; ``directory`` is the cwd.
The session's stored ``title`` changes after the first message (a generated title), so
it is not an event: the session is titled from its first prompt. ``data.import`` names
the file (relative to ``storage/``) instead of a line. OpenCode releases that keep
sessions in an SQLite database (``opencode.db``) are not read.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

from indexer.errors import LogValidationError
from indexer.logs.files import open_regular
from indexer.logs.importers.builder import EventBuilder, import_whole
from indexer.logs.importers.common import (
    OPENCODE,
    assistant_message,
    safe_name,
    text_block,
    tool_call_block,
    tool_result_message,
    user_message,
)
from indexer.logs.reader import LogRejectedError, SessionLog, parse_line
from indexer.model.header import SessionHeader, is_safe_int

__all__ = ["OpenCodeImporter", "is_opencode_session", "read_opencode"]

MAX_PART_BYTES: Final = 64 << 20
"""The largest message or part document read (a tool's whole output can be in one)."""
_TOOL_DONE: Final = frozenset({"completed", "error"})


def is_opencode_session(obj: object) -> bool:
    return (
        isinstance(obj, dict)
        and isinstance(obj.get("id"), str)
        and obj["id"].startswith("ses")
        and isinstance(obj.get("time"), dict)
        and ("projectID" in obj or "directory" in obj)
    )


def _load(path: Path, storage: Path) -> Any:
    """One JSON document; a broken one rejects the session, naming the file."""
    try:
        with open_regular(path) as f:
            data = f.read(MAX_PART_BYTES + 1)
    except OSError as exc:
        raise LogRejectedError(path, 1, f"cannot read: {exc}") from exc
    if len(data) > MAX_PART_BYTES:
        raise LogRejectedError(path, 1, f"document larger than {MAX_PART_BYTES} bytes")
    try:
        return parse_line(data)
    except LogValidationError as exc:
        raise LogRejectedError(path, 1, exc.message) from exc


def _listed(directory: Path) -> list[Path]:
    """The ``*.json`` files of ``directory``, by name (none when it cannot be listed)."""
    try:
        return sorted(p for p in directory.iterdir() if p.name.endswith(".json"))
    except OSError:
        return []


def _created(obj: dict[str, Any]) -> int | None:
    time = obj.get("time")
    value: Any = time.get("created", time.get("start")) if isinstance(time, dict) else None
    return int(value) if is_safe_int(value) else None


def _origin(file: str, obj: dict[str, Any], kind: str) -> dict[str, Any]:
    out: dict[str, Any] = {"agent": OPENCODE, "file": file, "record": kind}
    if isinstance(obj.get("id"), str):
        out["id"] = obj["id"]
    return out


def _model(message: dict[str, Any]) -> tuple[str, Any]:
    model = message.get("model")
    if isinstance(model, dict):
        return str(model.get("providerID") or "opencode"), model.get("modelID")
    return str(message.get("providerID") or "opencode"), message.get("modelID")


def _user(b: EventBuilder, file: str, message: dict[str, Any], parts: list[Any]) -> None:
    content: list[dict[str, Any]] = []
    prompt: list[str] = []
    for _f, part in parts:
        if part.get("type") == "text" and isinstance(part.get("text"), str):
            content.append(text_block(part["text"]))
            if part.get("synthetic") is not True:
                prompt.append(part["text"])
        elif isinstance(part.get("type"), str):
            content.append({"type": part["type"]})
    data = user_message(content, message.get("id"), file)
    data["import"] = _origin(file, message, "user")
    b.add("user/message", _created(message), data, prompt="\n".join(prompt) or None)


def _assistant(b: EventBuilder, file: str, message: dict[str, Any], parts: list[Any]) -> None:
    time = _created(message)
    blocks: list[dict[str, Any]] = []
    results: list[tuple[str, dict[str, Any]]] = []
    others: list[tuple[str, dict[str, Any]]] = []
    for part_file, part in parts:
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("text"), str):
            blocks.append(text_block(part["text"]))
        elif kind == "reasoning" and isinstance(part.get("text"), str):
            blocks.append({"type": "reasoning", "text": part["text"]})
        elif kind == "tool":
            state = part.get("state") if isinstance(part.get("state"), dict) else {}
            blocks.append(tool_call_block(part.get("callID"), part.get("tool"), state.get("input")))
            if state.get("status") in _TOOL_DONE:
                results.append((part_file, part))
        else:
            others.append((part_file, part))
    provider, model = _model(message)
    out = assistant_message(blocks, message.get("id"), file, provider, model)
    b.add(
        "assistant/message", time, {"message": out, "import": _origin(file, message, "assistant")}
    )
    for part_file, part in results:
        state = part["state"]
        failed = state.get("status") == "error"
        text = state.get("error") if failed else state.get("output")
        content = [text_block(text if isinstance(text, str) else "")]
        result = tool_result_message(part.get("callID"), content, failed, part_file)
        b.add("tool/result", time, {"message": result, "import": _origin(part_file, part, "tool")})
    for _part_file, part in others:
        kind = part.get("type")
        b.add(f"{OPENCODE}/{kind if isinstance(kind, str) else 'part'}", time, part)


class OpenCodeImporter:
    """The :class:`~indexer.logs.importers.builder.Importer` of one session: its
    messages in ``(time.created, id)`` order, each read with its parts when it is
    mapped (what is held is one message's files, not the session's)."""

    def __init__(self, b: EventBuilder) -> None:
        self.b = b
        b.line = 1
        self.storage = b.path.parent.parent.parent
        session = _load(b.path, self.storage)
        if not is_opencode_session(session):
            raise b.reject("not an OpenCode session file: no id, time and projectID", 1)
        sid = safe_name(session["id"])
        if sid is None:
            raise b.reject("the session id cannot name a directory of the storage", 1)
        self.session = session
        self.sid = sid

    def units(self) -> Iterator[tuple[str, dict[str, Any], list[Any]]]:
        order: list[tuple[int, str, Path]] = []
        for path in _listed(self.storage / "message" / self.sid):
            message = _load(path, self.storage)
            if isinstance(message, dict):
                order.append((_created(message) or 0, str(message.get("id", "")), path))
        order.sort(key=lambda o: (o[0], o[1]))
        for _created_at, _id, path in order:
            message = _load(path, self.storage)
            if not isinstance(message, dict):
                continue
            self.b.consumed(path.stat().st_size)
            mid = safe_name(message.get("id"))
            parts: list[tuple[str, dict[str, Any]]] = []
            for part_path in _listed(self.storage / "part" / mid) if mid is not None else []:
                part = _load(part_path, self.storage)
                if isinstance(part, dict):
                    self.b.consumed(part_path.stat().st_size)
                    parts.append((str(part_path.relative_to(self.storage)), part))
            yield str(path.relative_to(self.storage)), message, parts

    def map(self, unit: tuple[str, dict[str, Any], list[Any]]) -> None:
        file, message, parts = unit
        if message.get("role") == "user":
            _user(self.b, file, message, parts)
        elif message.get("role") == "assistant":
            _assistant(self.b, file, message, parts)
        else:
            self.b.add(f"{OPENCODE}/message", _created(message), message)

    def settled(self) -> SessionHeader | None:
        return self.header()

    def header(self) -> SessionHeader:
        session = self.session
        created = _created(session)
        if created is None:
            raise self.b.reject("the session file has no time.created", 1)
        cwd = session.get("directory")
        parent = session.get("parentID")
        parent = parent if isinstance(parent, str) and parent else None
        return SessionHeader(
            id=self.sid,
            createdAt=max(created, 0),
            cwd=cwd if isinstance(cwd, str) and cwd.startswith("/") else None,
            parentSession=parent,
            origin="subagent" if parent is not None else None,
            delegationDepth=1 if parent is not None else None,
            sourceAgent=OPENCODE,
        )


def read_opencode(path: Path | str) -> SessionLog:
    """One OpenCode session as one piece (:class:`OpenCodeImporter`)."""
    return import_whole(Path(path), OpenCodeImporter)
