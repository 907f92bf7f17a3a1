"""Which agent wrote a log, and where the logs under the given paths are.

A given path is a file (its format read from its content, or forced) or a directory:
an agent's tree (``indexer.logs.importers.trees``: Claude Code, Codex, Gemini CLI /
Qwen Code, OpenCode, Copilot CLI), a dsh root (``indexer.logs.roots``), or a plain
directory whose files are recognised one by one, with the Aider chat histories in it
and in its subdirectories. ``format`` forces one reading for every path.

A source is one session: a file, or one session of a file holding many (an Aider
history: :func:`file_sources` lists one source per session, ``LogSource.section``).
Nothing is opened that is not a regular file: FIFOs, sockets, devices and symlink loops
are skipped with one note per path (:func:`discover_report`), and a walk never follows
a loop.

A file of a format sessionq does not read is reported as such ("looks like …; not a
supported session log", :func:`describe_unsupported`), not as a broken dsh log.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from indexer.errors import LogValidationError
from indexer.formats import FORMATS, LogFormat
from indexer.logs.files import Skipped, classify, open_regular, real_key
from indexer.logs.importers.aider import AiderImporter
from indexer.logs.importers.aider_file import (
    Section,
    histories,
    history_sections,
    is_history,
    section_session_id,
    starts_history,
)
from indexer.logs.importers.builder import MakeImporter, import_pieces
from indexer.logs.importers.claude_code import (
    CLAUDE_RECORD_TYPES,
    ClaudeCodeImporter,
    subagent_of,
)
from indexer.logs.importers.codex import CodexImporter
from indexer.logs.importers.copilot import COPILOT_EVENT_TYPES, CopilotImporter
from indexer.logs.importers.documents import members
from indexer.logs.importers.gemini import GeminiImporter, is_gemini_document
from indexer.logs.importers.opencode import OpenCodeImporter, is_opencode_session
from indexer.logs.importers.trees import TreeFormat, tree_files, tree_format
from indexer.logs.jsonl import ZSTD_MAGIC
from indexer.logs.reader import (
    PIECE_EVENTS,
    LogPieces,
    LogRejectedError,
    SessionLog,
    expanded,
    parse_line,
    read_log,
)
from indexer.logs.roots import file_key, implied_session_id, walk_root

__all__ = [
    "FORMATS",
    "Discovery",
    "LogFormat",
    "LogSource",
    "describe_unsupported",
    "detect_file",
    "discover_report",
    "discover_sources",
    "file_sources",
    "read_source",
    "read_source_pieces",
]

_PEEK_BYTES: Final = 1 << 16


@dataclass(frozen=True, slots=True)
class LogSource:
    """One session's log and the format it is read as. ``known_paths``: absolute paths
    a Gemini CLI project hash may be the hash of (the paths discovery was given).
    ``section``: which session of a file holding many (an Aider history); ``None`` for
    a file of one session (and for a history: its first)."""

    path: Path
    format: LogFormat
    known_paths: tuple[str, ...] = ()
    section: Section | None = None

    @property
    def key(self) -> tuple[Path, int]:
        """What tells two sources apart: the file, and the session's ordinal in it (-1
        for a file of one session)."""
        return self.path, -1 if self.section is None else self.section.ordinal

    @property
    def name(self) -> str:
        """The source as reports name it: the file, or ``<file>:<line>`` of the
        session's start line."""
        return str(self.path) if self.section is None else f"{self.path}:{self.section.line}"

    @property
    def session_id(self) -> str | None:
        """The id of the session it holds when known before reading it (an Aider
        section's, from the file's path and the section); else ``None``."""
        return None if self.section is None else section_session_id(self.path, self.section)


@dataclass(slots=True)
class Discovery:
    """The logs found under some paths, and the paths skipped (one note each)."""

    sources: list[LogSource] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)


def _head(path: Path, size: int) -> bytes | None:
    try:
        with open_regular(path) as f:
            return f.read(size)
    except OSError:
        return None


def _first_record(path: Path) -> object:
    """The first line decoded, or (a pretty-printed document) the whole document, or
    ``None``. A zstd file is a dsh log: no other agent writes one."""
    head = _head(path, _PEEK_BYTES)
    if head is None:
        return None
    if head.startswith(ZSTD_MAGIC):
        return {"type": "session"}
    if starts_history(head):
        return {"type": "aider"}
    line = head.split(b"\n", 1)[0]
    try:
        return parse_line(line) if line.strip() else None
    except LogValidationError:
        pass
    if head.lstrip()[:1] != b"{":
        return None
    try:  # a pretty-printed document: its members up to a chat's messages, streamed
        return members(path, "messages", stop=True)
    except (LogValidationError, OSError):
        return None


def _by_content(obj: object) -> LogFormat | None:
    if not isinstance(obj, dict):
        return None
    kind = obj.get("type")
    if not isinstance(kind, str | None):
        return None
    if kind == "session":
        return "dsh"
    if kind == "aider" and len(obj) == 1:
        return "aider"
    if kind == "session_meta" or ("payload" in obj and "timestamp" in obj):
        return "codex"
    if kind is None and is_gemini_document(obj):
        return "gemini"
    if is_opencode_session(obj):
        return "opencode"
    if kind in COPILOT_EVENT_TYPES or (
        isinstance(kind, str) and "." in kind and "data" in obj and "parentId" in obj
    ):
        return "copilot"
    if "sessionId" in obj or kind in CLAUDE_RECORD_TYPES:
        return "claude-code"
    return None


def detect_file(path: Path) -> LogFormat:
    """The format of one file from its first record (or a document's head); unknown
    content falls back to the file's name and place, then to dsh (whose reader then
    reports what is wrong)."""
    try:
        found = _by_content(_first_record(path))
    except (OSError, MemoryError):
        raise
    except Exception:  # content no rule expects: the name decides, the reader reports
        found = None
    if found is not None:
        return found
    name, parts = path.name, path.parts
    if is_history(path):
        return "aider"
    if name.startswith("rollout-"):
        return "codex"
    if path.parent.name == "chats" and name.startswith("session-"):
        return "gemini"
    if name == "events.jsonl" and "session-state" in parts:
        return "copilot"
    if path.parent.parent.name == "session" and name.startswith("ses") and name.endswith(".json"):
        return "opencode"
    if subagent_of(path) is not None or ".claude" in parts:
        return "claude-code"
    return "dsh"


def describe_unsupported(path: Path) -> str | None:
    """What a file that no reader takes looks like ("looks like …; not a supported
    session log"), or ``None`` when it looks like a (broken) log line by line."""
    head = _head(path, _PEEK_BYTES)
    if head is None or head.startswith(ZSTD_MAGIC):
        return None
    what: str | None = None
    if head.startswith(b"SQLite format 3\x00"):
        what = "an SQLite database (OpenCode 1.2 and later keep sessions in one)"
    elif b"\x00" in head:
        what = "a binary file"
    else:
        obj = _first_record(path)
        first = head.split(b"\n", 1)[0]
        if isinstance(obj, dict) and "chatMessages" in obj:
            what = "a Copilot CLI history-session-state file"
        elif isinstance(obj, (dict, list)) and first.strip() in (b"{", b"["):
            what = "a JSON document"
        elif obj is None and head.lstrip()[:1] not in (b"{", b"["):
            what = "a text file that is not JSON lines"
    return None if what is None else f"looks like {what}; not a supported session log"


def _odd(paths: Iterable[Path]) -> list[Skipped]:
    """Log paths that are no regular files, each with what it is."""
    return [Skipped(p, kind) for p in paths if (kind := classify(p)) not in ("file", "missing")]


def file_sources(path: Path, fmt: LogFormat, known: tuple[str, ...] = ()) -> list[LogSource]:
    """The sources one file holds, read as ``fmt``: the file, or each session of an
    Aider history worth reading (``aider_file.history_sections``; a history it cannot
    list is one bare source, whose reading says why)."""
    if fmt != "aider":
        return [LogSource(path, fmt, known if fmt == "gemini" else ())]
    sections = history_sections(path)
    if sections is None:
        return [LogSource(path, "aider")]
    return [LogSource(path, "aider", section=s) for s in sections]


def _tree(path: Path, fmt: LogFormat, known: tuple[str, ...], out: Discovery) -> None:
    if fmt == "dsh":
        found = walk_root(path)
        out.sources.extend(LogSource(p, "dsh") for p in found.files)
        out.skipped.extend(_odd(found.odd))
        return
    files, skipped = histories(path) if fmt == "aider" else tree_files(path, fmt)
    out.sources.extend(s for p in files for s in file_sources(p, fmt, known))
    out.skipped.extend(skipped)


def _directory(
    path: Path,
    forced: LogFormat | None,
    known: tuple[str, ...],
    out: Discovery,
    trees: Mapping[Path, TreeFormat | None] | None,
) -> None:
    fmt = forced or (trees[path] if trees is not None and path in trees else tree_format(path))
    if fmt is not None:
        _tree(path, fmt, known, out)
        return
    found = walk_root(path)
    files = found.files
    if not files:  # a copied Claude Code projects directory: <project>/<session>.jsonl
        nested = sorted(p for p in path.glob("*/*.jsonl") if classify(p) == "file")
        if nested and detect_file(nested[0]) == "claude-code":
            _tree(path, "claude-code", known, out)
            return
    # Files of a dsh root layout are dsh logs; a plain directory's are recognised each.
    for p in files:
        fmt = "dsh" if implied_session_id(p) is not None else detect_file(p)
        out.sources.extend(file_sources(p, fmt, known))
    out.skipped.extend(_odd(found.odd))
    _tree(path, "aider", known, out)


def discover_report(
    paths: Iterable[Path | str],
    format: LogFormat | None = None,
    *,
    trees: Mapping[Path, TreeFormat | None] | None = None,
) -> Discovery:
    """Every log under ``paths`` with its format, and every path skipped with why:
    deterministic, each file once (the first path that reaches it wins), arguments
    in order. A missing path raises ``FileNotFoundError``, as
    :func:`indexer.logs.roots.discover` does. ``trees``: the layouts of given
    directories known already (``tree_format`` probes a tree; a watcher that walks the
    same roots again and again asks once)."""
    given = [Path(p) for p in paths]
    known = tuple(real_key(p) for p in given)
    found = Discovery()
    for path in given:
        kind = classify(path)
        if kind == "missing":
            raise FileNotFoundError(f"no such session log or directory: {path}")
        if kind == "dir":
            _directory(path, format, known, found, trees)
        elif kind in ("file", "dangling"):
            found.sources.extend(file_sources(path, format or detect_file(path), known))
        else:
            found.skipped.append(Skipped(path, kind))
    out = Discovery(skipped=found.skipped)
    seen: set[tuple[tuple[int, int] | str, int]] = set()
    for source in found.sources:
        key = (file_key(source.path), source.key[1])
        if key not in seen:
            seen.add(key)
            out.sources.append(source)
    return out


def discover_sources(
    paths: Iterable[Path | str], format: LogFormat | None = None
) -> list[LogSource]:
    """The logs of :func:`discover_report`, without the skipped paths."""
    return discover_report(paths, format).sources


_IMPORTERS: Final[dict[str, MakeImporter]] = {
    "claude-code": ClaudeCodeImporter,
    "codex": CodexImporter,
    "opencode": OpenCodeImporter,
    "copilot": CopilotImporter,
}


def _pieces(source: LogSource, max_events: int | None) -> Iterator[SessionLog]:
    """The pieces of another agent's log (``indexer.logs.importers.builder``)."""
    known, section = source.known_paths, source.section
    make: MakeImporter
    if source.format == "gemini":
        make = lambda b: GeminiImporter(b, known)  # noqa: E731
    elif source.format == "aider":
        make = lambda b: AiderImporter(b, section)  # noqa: E731
    else:
        make = _IMPORTERS[source.format]
    return import_pieces(source.path, make, max_events=max_events)


def _read(source: LogSource) -> SessionLog:
    if source.format == "dsh":
        return read_log(source.path)
    (log,) = _pieces(source, None)
    return log


def read_source(source: LogSource | Path) -> SessionLog:
    """Read one log as its format says (a bare path is a dsh log); raises
    ``LogRejectedError`` for a file that cannot be read (a file no reader takes:
    "looks like …; not a supported session log"), ``OSError`` for I/O errors and
    ``NotRegularFileError`` for a FIFO, socket or device."""
    if isinstance(source, Path):
        source = LogSource(source, "dsh")
    try:
        return _read(source)
    except LogRejectedError as exc:
        unsupported = _unsupported(source, exc)
        if unsupported is None:
            raise
        raise unsupported from exc


def read_source_pieces(
    source: LogSource | Path, *, max_events: int = PIECE_EVENTS, pieces: LogPieces | None = None
) -> Iterator[SessionLog]:
    """``read_source`` in pieces (``indexer.logs.reader.LogPieces``) for a dsh log, so
    what is held at once is bounded; another agent's log is read whole, as one piece.
    The errors are ``read_source``'s, each raised when the piece holding it is read.
    ``pieces``: the reading of a dsh log to use (a caller that wants its ``end``)."""
    if isinstance(source, Path):
        source = LogSource(source, "dsh")
    if source.format != "dsh":
        yield from _pieces(source, max_events)
        return
    if pieces is None:
        pieces = LogPieces(source.path, max_events=max_events)
    try:
        for piece in pieces:
            log = expanded(piece)
            del piece  # nothing of a piece is held here while the next one is read
            yield log
            del log
    except LogRejectedError as exc:
        unsupported = _unsupported(source, exc)
        if unsupported is None:
            raise
        raise unsupported from exc


def _unsupported(source: LogSource, exc: LogRejectedError) -> LogRejectedError | None:
    """A dsh reading rejected on line 1 said as what it is: a file no reader takes,
    when it looks like one (``None``: the rejection stands as it is)."""
    if exc.line != 1 or source.format != "dsh":
        return None
    unsupported = describe_unsupported(source.path)
    return None if unsupported is None else LogRejectedError(source.path, 1, unsupported)
