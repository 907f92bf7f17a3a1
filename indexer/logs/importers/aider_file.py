"""Aider's chat history: one Markdown file, ``.aider.chat.history.md`` in the directory
Aider ran in (a repository's root), that Aider appends to and that holds every session
run there.

Each run starts with a line ``# aider chat started at YYYY-MM-DD HH:MM:SS``; a session
is the lines from one such line up to the next (or the end of the file). sessionq
reads each session as a unit of its own: discovery lists a file's sessions
(:func:`history_sections`, each a :class:`Section`) and the importer (``aider``)
reads one, so a rejection, a held session or a watcher's state concerns one session,
never the file's others.

Lines (:func:`read_lines`): bytes split at ``\\n`` (a ``\\r`` before it dropped: a
history written on Windows), decoded as UTF-8 (an invalid byte reads as U+FFFD; Aider
writes UTF-8 and drops what it cannot encode). A last line without its newline is not
read: Aider ends every write with one, so it is a write still under way, read once it
is whole. A line longer than ``MAX_LINE_BYTES`` is the session's rejection.

Identity (:func:`section_session_id`): Aider names no session. The id is a name-based
UUID (v5) of the file's real path, the session's ordinal among the file's start lines
and its start line, so it is stable across re-reads and appends (Aider only appends:
an earlier session keeps its ordinal and its line) and unique per file and session.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from indexer.errors import LogValidationError
from indexer.logs.files import Skipped, open_regular, walk
from indexer.logs.importers.common import name_uuid
from indexer.logs.jsonl import MAX_LINE_BYTES

__all__ = [
    "HISTORY_NAME",
    "START",
    "Section",
    "histories",
    "history_sections",
    "is_history",
    "read_lines",
    "section_session_id",
    "starts_history",
]

HISTORY_NAME: Final = ".aider.chat.history.md"
"""Aider's default file name; copies named ``<anything>.aider.chat.history.md`` count too."""
START: Final = b"# aider chat started at "
USER: Final = b"####"
_READ_SIZE: Final = 1 << 20
_NAMESPACE: Final = uuid.uuid5(uuid.NAMESPACE_URL, "sessionq:aider")


@dataclass(frozen=True, slots=True)
class Section:
    """One session of a history: its ``ordinal`` among the file's start lines (from 0),
    the byte ``offset`` and number (``line``, 1-based) of its start line, the start
    line's text after the marker (``started``, its time), and ``size``: its bytes up to
    the next start line or the end of the file, when it was listed."""

    ordinal: int
    offset: int
    line: int
    started: str
    size: int


def is_history(path: Path) -> bool:
    """Whether ``path`` is named as an Aider chat history."""
    return path.name.endswith(HISTORY_NAME)


def starts_history(head: bytes) -> bool:
    """Whether a file's first bytes open an Aider chat history."""
    return head.lstrip().startswith(START)


def read_lines(path: Path, offset: int = 0, line: int = 0) -> Iterator[tuple[int, int, bytes]]:
    """``(line number, byte offset, line)`` for every whole line from ``offset`` (the
    start of line ``line + 1``), the newline and a ``\\r`` before it removed (module
    docstring). Raises ``LogValidationError`` (with the line) for a line longer than
    ``MAX_LINE_BYTES``, ``OSError`` for I/O errors."""
    with open_regular(path) as f:
        f.seek(offset)
        pending = b""
        while chunk := f.read(_READ_SIZE):
            data = pending + chunk if pending else chunk
            start = 0
            while (end := data.find(b"\n", start)) >= 0:
                line += 1
                if end - start > MAX_LINE_BYTES:
                    raise LogValidationError(f"line longer than {MAX_LINE_BYTES} bytes", line=line)
                raw = data[start:end]
                yield line, offset + start, raw[:-1] if raw.endswith(b"\r") else raw
                start = end + 1
            offset += start
            pending = data[start:]
            if len(pending) > MAX_LINE_BYTES:
                raise LogValidationError(f"line longer than {MAX_LINE_BYTES} bytes", line=line + 1)


def _sections(path: Path) -> tuple[list[Section], list[bool], bool]:
    """Every section of the file, whether each holds a user line (``####``), and
    whether text that is no session's precedes the first (or makes up the file)."""
    starts: list[tuple[int, int, str]] = []  # offset, line, started
    spoken: list[bool] = []
    stray = False
    end = 0
    for no, offset, raw in read_lines(path):
        end = offset + len(raw) + 1
        if raw.startswith(START):
            starts.append((offset, no, raw[len(START) :].decode(errors="replace").strip()))
            spoken.append(False)
        elif not starts:
            stray = stray or bool(raw.strip())
        elif raw.startswith(USER):
            spoken[-1] = True
    ends = [offset for offset, _, _ in starts[1:]] + [end] * bool(starts)
    found = [
        Section(n, offset, line, started, stop - offset)
        for n, ((offset, line, started), stop) in enumerate(zip(starts, ends, strict=True))
    ]
    return found, spoken, stray


def history_sections(path: Path) -> list[Section] | None:
    """The sessions of a history worth reading: those holding a user message (Aider
    writes a start line at every launch, also for one that ended before anyone said
    anything). ``None`` when the file cannot be listed (an I/O error, a line too long)
    or holds text but no start line: read as a bare source, its reading says why."""
    try:
        found, spoken, stray = _sections(path)
    except (OSError, LogValidationError):
        return None
    if not found:
        return None if stray else []
    return [s for s, said in zip(found, spoken, strict=True) if said]


def histories(root: Path) -> tuple[list[Path], list[Skipped]]:
    """The histories in a directory and in its subdirectories (a repository checkout,
    a directory of checkouts, or of copies named ``<anything>.aider.chat.history.md``)."""
    return walk(root, is_history, max_depth=1)


def section_session_id(path: Path, section: Section) -> str:
    """The session id of one section (module docstring)."""
    return name_uuid(_NAMESPACE, os.path.realpath(path), str(section.ordinal), section.started)
