"""Gemini CLI chats (and Qwen Code's, the same format): ``~/.gemini/tmp/<project>/chats/``.

Two generations of files hold one session each:

* ``session-<time>-<id8>.json`` (Gemini CLI before 0.30): one JSON document
  ``{sessionId, projectHash, startTime, lastUpdated, messages: [...], summary?, kind?}``;
* ``session-<time>-<id8>.jsonl`` (later versions; a resumed ``.json`` session is
  rewritten as one): a metadata line ``{sessionId, projectHash, startTime, ...}``, then
  one line per message record, ``{"$set": {...}}`` metadata updates and
  ``{"$rewindTo": <message id>}`` rewinds; a message is appended again, whole, each
  time it changes (tool calls, their results). Subagents write
  ``chats/<parent session id>/<session id>.jsonl`` with ``kind: "subagent"``.

A message record ``{id, timestamp, type, content, thoughts?, toolCalls?, model?}``
maps, in file order, to: ``user`` → ``user/message``; ``gemini`` → one
``assistant/message`` (``thoughts`` as ``reasoning`` blocks, ``content`` as text, each
tool call as a ``tool-call`` block) and one ``tool/result`` per tool call with a
result; ``info``/``error``/``warning`` and every other record → log-only
``gemini-cli/<type>``. A record repeating a message id maps only what it adds (tool
calls and results not seen before, text where there was none), so a file that grows
by re-appended messages maps to the same events plus new ones. A rewind is kept as a
log-only event: what was said before it stays searchable. ``summary`` (a ``$set``, or
the document's field) is a ``session/title`` where it appears.

The project is named by ``projectHash``, the sha256 of the project root's absolute
path. The session's ``cwd`` is the known path that hashes to it — the paths discovery
was given (``known_paths``), the ``.project_root`` file beside ``chats/``, the keys of
``projects.json`` in the Gemini home, the session's ``directories`` — else the
workspace key ``/gemini-project/<projectHash>`` (``/qwen-project/…`` for Qwen Code): a
path no real session works in, so such a session shares its workspace only with the
sessions of the same project.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Final

import orjson

from indexer.errors import LogValidationError
from indexer.logs.files import open_regular
from indexer.logs.importers.builder import EventBuilder, import_whole
from indexer.logs.importers.common import (
    GEMINI_CLI,
    QWEN_CODE,
    assistant_message,
    iso_ms,
    text_block,
    tool_call_block,
    tool_result_message,
    user_message,
)
from indexer.logs.importers.documents import Document, open_document
from indexer.logs.jsonl import MAX_DECOMPRESSED_BYTES, iter_lines
from indexer.logs.reader import SessionLog
from indexer.model.header import SessionHeader

__all__ = ["GeminiImporter", "is_gemini_document", "project_hash", "read_gemini"]

MAX_DOCUMENT_BYTES: Final = MAX_DECOMPRESSED_BYTES
"""The largest ``.json`` chat document read (streamed: its size is not what is held)."""


def project_hash(path: str) -> str:
    """Gemini CLI's project id of an absolute project root: sha256 of the path text."""
    return hashlib.sha256(path.encode()).hexdigest()


def is_gemini_document(obj: object) -> bool:
    return (
        isinstance(obj, dict)
        and isinstance(obj.get("sessionId"), str)
        and ("projectHash" in obj or isinstance(obj.get("messages"), list))
    )


def _parts(content: Any) -> list[dict[str, Any]]:
    """``PartListUnion`` as dsh blocks: text kept, other parts a placeholder."""
    if isinstance(content, str):
        return [text_block(content)] if content else []
    items = content if isinstance(content, list) else [content]
    out: list[dict[str, Any]] = []
    for part in items:
        if isinstance(part, str):
            out.append(text_block(part))
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            out.append(text_block(part["text"]))
        elif isinstance(part, dict) and part:
            out.append({"type": next(iter(part))})
    return out


def _result_blocks(result: Any) -> list[dict[str, Any]]:
    """A tool call's ``result`` (function responses, or parts) as text blocks."""
    out: list[dict[str, Any]] = []
    for part in result if isinstance(result, list) else [result]:
        response = part.get("functionResponse") if isinstance(part, dict) else None
        if isinstance(response, dict):
            body = response.get("response")
            if isinstance(body, dict):
                text = body.get("output", body.get("content", body.get("error")))
                if text is None:
                    text = orjson.dumps(body).decode()
                out.extend(_parts(text) if not isinstance(text, str) else [text_block(text)])
        else:
            out.extend(_parts(part))
    return out


class _Chat:
    """Maps records in order; remembers what each message id already gave."""

    def __init__(self, b: EventBuilder, agent: str) -> None:
        self.b = b
        self.agent = agent
        self.texts: set[str] = set()  # message ids whose text (or user content) is mapped
        self.calls: set[str] = set()  # tool call ids mapped as calls
        self.results: set[str] = set()  # tool call ids mapped as results
        self.meta: dict[str, Any] = {}

    def origin(self, record: dict[str, Any], kind: str) -> dict[str, Any]:
        out = {"agent": self.agent, "line": self.b.line, "record": kind}
        if isinstance(record.get("id"), str):
            out["id"] = record["id"]
        return out

    def message(self, record: dict[str, Any]) -> None:
        b, mid, kind = self.b, record["id"], record.get("type")
        time = iso_ms(record.get("timestamp"))
        if kind == "user":
            if mid in self.texts:
                return
            self.texts.add(mid)
            content = _parts(record.get("content"))
            data = {**user_message(content, mid, mid), "import": self.origin(record, "user")}
            prompt = "\n".join(c["text"] for c in content if c.get("type") == "text")
            b.add("user/message", time, data, prompt=prompt or None)
        elif kind == "gemini":
            self.model(record, mid, time)
        else:
            b.add(f"{self.agent}/{kind if isinstance(kind, str) else 'message'}", time, record)

    def model(self, record: dict[str, Any], mid: str, time: int | None) -> None:
        blocks: list[dict[str, Any]] = []
        text = _parts(record.get("content"))
        if mid not in self.texts and (text or record.get("thoughts")):
            self.texts.add(mid)
            for thought in record.get("thoughts") or []:
                if isinstance(thought, dict):
                    parts = [thought.get("subject"), thought.get("description")]
                    words = ": ".join(p for p in parts if isinstance(p, str) and p)
                    blocks.append({"type": "reasoning", "text": words})
            blocks.extend(text)
        calls = [c for c in record.get("toolCalls") or [] if isinstance(c, dict)]
        for call in calls:
            cid = call.get("id")
            if isinstance(cid, str) and cid not in self.calls:
                self.calls.add(cid)
                blocks.append(tool_call_block(cid, call.get("name"), call.get("args", {})))
        if blocks:
            message = assistant_message(blocks, mid, mid, "google", record.get("model"))
            origin = self.origin(record, "gemini")
            self.b.add("assistant/message", time, {"message": message, "import": origin})
        for call in calls:
            cid = call.get("id")
            if not isinstance(cid, str) or cid in self.results or call.get("result") is None:
                continue
            self.results.add(cid)
            failed = call.get("status") == "error"
            result = tool_result_message(cid, _result_blocks(call["result"]), failed, cid)
            origin = {**self.origin(record, "toolCall"), "callId": cid}
            when = iso_ms(call.get("timestamp")) or time
            self.b.add("tool/result", when, {"message": result, "import": origin})

    def title(self, summary: Any, kind: str) -> None:
        if isinstance(summary, str) and summary:
            data = {
                "title": summary,
                "messageSeqs": [],
                "source": {"kind": "provider", "provider": "google"},
                "import": {"agent": self.agent, "line": self.b.line, "record": kind},
            }
            self.b.add("session/title", None, data)

    def record(self, record: Any) -> None:
        """One line of a ``.jsonl`` chat."""
        if not isinstance(record, dict):
            raise self.b.reject("record is not a JSON object")
        if isinstance(record.get("$set"), dict):
            update = record["$set"]
            self.meta.update({k: v for k, v in update.items() if k != "messages"})
            for message in update.get("messages") or []:
                if isinstance(message, dict) and isinstance(message.get("id"), str):
                    self.message(message)
            if "summary" in update:
                self.title(update["summary"], "$set")
            else:
                self.b.add(f"{self.agent}/set", None, record)
        elif "$rewindTo" in record:
            self.b.add(f"{self.agent}/rewind", None, record)
        elif isinstance(record.get("id"), str):
            self.message(record)
        elif isinstance(record.get("sessionId"), str) and not self.meta:
            self.meta.update(record)
            self.b.add(f"{self.agent}/session", iso_ms(record.get("startTime")), record)
        else:
            self.b.add(f"{self.agent}/record", None, record)


def _project_dir(path: Path) -> Path | None:
    for parent in path.parents:
        if parent.name == "chats":
            return parent.parent
    return None


def _hints(path: Path, meta: dict[str, Any], known: Iterable[str]) -> Iterator[str]:
    yield from known
    project = _project_dir(path)
    if project is not None:
        try:
            with open_regular(project / ".project_root") as f:
                yield f.read(1 << 16).decode(errors="replace").strip()
        except OSError:
            pass
        try:
            with open_regular(project.parent.parent / "projects.json") as f:
                listed = orjson.loads(f.read(1 << 22))
        except (OSError, orjson.JSONDecodeError):
            listed = None
        if isinstance(listed, dict):
            table = listed.get("projects", listed)
            yield from (k for k in table if isinstance(k, str)) if isinstance(table, dict) else ()
    directories = meta.get("directories")
    if isinstance(directories, list):
        yield from (d for d in directories if isinstance(d, str))


def _cwd(path: Path, meta: dict[str, Any], known: Iterable[str], agent: str) -> str | None:
    wanted = meta.get("projectHash")
    if not isinstance(wanted, str) or not wanted:
        return None
    for hint in _hints(path, meta, known):
        for candidate in (hint, hint.rstrip("/") or "/"):
            if candidate.startswith("/") and project_hash(candidate) == wanted:
                return candidate
    return f"/{'qwen' if agent == QWEN_CODE else 'gemini'}-project/{wanted}"


class GeminiImporter:
    """The :class:`~indexer.logs.importers.builder.Importer` of one chat: a ``.jsonl``
    file's lines, or a ``.json`` document's messages then its summary (its other members
    read first, streamed: ``indexer.logs.importers.documents``)."""

    def __init__(self, b: EventBuilder, known_paths: tuple[str, ...]) -> None:
        self.b = b
        self.known = known_paths
        self.agent = QWEN_CODE if ".qwen" in b.path.parts else GEMINI_CLI
        self.chat = _Chat(b, self.agent)
        self.document = None if b.path.name.endswith(".jsonl") else self._open()

    def _open(self) -> Document:
        size = self.b.path.stat().st_size
        if size > MAX_DOCUMENT_BYTES:
            raise self.b.reject(f"chat document larger than {MAX_DOCUMENT_BYTES} bytes", 1)
        try:
            document = open_document(self.b.path, "messages")
        except LogValidationError as exc:
            raise self.b.reject(exc.message, 1) from exc
        if not is_gemini_document(document.members):
            raise self.b.reject("not a Gemini CLI chat: no sessionId and messages", 1)
        self.chat.meta.update({k: v for k, v in document.members.items() if k != "messages"})
        return document

    def units(self) -> Iterator[Any]:
        b = self.b
        if self.document is None:
            for line_no, raw in iter_lines(b.path):
                b.line = line_no
                b.consumed(len(raw))
                yield b.parse(raw)
            return
        b.line = 1
        read = 0
        for message, at in self.document.items():
            b.consumed(at - read)
            read = at
            yield message
        yield _SUMMARY

    def map(self, unit: Any) -> None:
        chat = self.chat
        if self.document is None:
            chat.record(unit)
        elif unit is _SUMMARY:
            chat.title(self.document.members.get("summary"), "summary")
        elif isinstance(unit, dict) and isinstance(unit.get("id"), str):
            chat.message(unit)

    def settled(self) -> SessionHeader | None:
        meta = self.chat.meta
        known = self.document is not None or ("kind" in meta and "projectHash" in meta)
        return self.header() if known and self._created() is not None else None

    def _created(self) -> int | None:
        return iso_ms(self.chat.meta.get("startTime")) or self.b.first_time

    def header(self) -> SessionHeader:
        b, meta, path = self.b, self.chat.meta, self.b.path
        sid = meta.get("sessionId")
        if not isinstance(sid, str) or not sid:
            raise b.reject("no record carries a sessionId", 1)
        created = self._created()
        if created is None:
            raise b.reject("no record carries a timestamp", 1)
        subagent = meta.get("kind") == "subagent" and path.parent.name != "chats"
        return SessionHeader(
            id=sid,
            createdAt=max(created, 0),
            cwd=_cwd(path, meta, self.known, self.agent),
            parentSession=path.parent.name if subagent else None,
            origin="subagent" if subagent else None,
            delegationDepth=1 if subagent else None,
            sourceAgent=self.agent,
        )


_SUMMARY: Final = object()
"""The unit after a document's messages: its ``summary`` member."""


def read_gemini(path: Path | str, known_paths: Iterable[str] = ()) -> SessionLog:
    """One chat as one piece (:class:`GeminiImporter`)."""
    known = tuple(known_paths)
    return import_whole(Path(path), lambda b: GeminiImporter(b, known))
