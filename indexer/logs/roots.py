"""Finding session log files on disk.

Three inputs are understood: a file (taken as is); a dsh persistence root, laid out as
``<root>/--<project key>--/<encoded id>/session.jsonl[.zstd]`` (``_no-cwd`` instead of
the project key for sessions without a cwd); and a plain directory of ``*.jsonl`` /
``*.jsonl.zstd`` files. A project directory or a session directory of a root also works.
Discovery does not recurse beyond that layout, so pointing it at a large tree stays
cheap and predictable.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

__all__ = [
    "LOG_SUFFIXES",
    "SESSION_LOG_NAMES",
    "Walk",
    "decode_segment",
    "discover",
    "file_key",
    "implied_session_id",
    "is_log_file",
    "is_project_name",
    "walk_root",
]

LOG_SUFFIXES: Final = (".jsonl", ".jsonl.zstd")
SESSION_LOG_NAMES: Final = ("session.jsonl", "session.jsonl.zstd")
NO_CWD_DIR: Final = "_no-cwd"

# encodeSegment keeps [A-Za-z0-9._-] (except "~") literal and writes every other UTF-16
# code unit as "~XXXX" (upper-case hex).
_SEGMENT: Final = re.compile(r"(?:[A-Za-z0-9._-]|~[0-9A-F]{4})+")
_ESCAPE: Final = re.compile(r"~([0-9A-F]{4})")


def is_log_file(path: Path) -> bool:
    """A file whose name ends in ``.jsonl`` or ``.jsonl.zstd``."""
    return path.name.endswith(LOG_SUFFIXES) and path.is_file()


def _is_project_dir(path: Path) -> bool:
    return is_project_name(path.name)


def is_project_name(name: str) -> bool:
    return name == NO_CWD_DIR or (len(name) > 4 and name.startswith("--") and name.endswith("--"))


def _entries(directory: Path) -> list[os.DirEntry[str]]:
    """A directory's entries sorted by name (one ``getdents`` pass: the entry types come
    with it, so listing a root costs no ``stat`` per entry); none when unreadable."""
    try:
        with os.scandir(directory) as it:
            return sorted(it, key=lambda e: e.name)
    except OSError:
        return []


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


@dataclass(slots=True)
class Walk:
    """What one walk found: the logs, and the log paths that are no regular files."""

    files: list[Path] = field(default_factory=list)
    odd: list[Path] = field(default_factory=list)

    def take(self, entry: os.DirEntry[str]) -> None:
        try:
            regular = entry.is_file()
        except OSError:
            regular = False
        if regular or entry.is_symlink():  # a dangling link is listed: reading it says why
            self.files.append(Path(entry.path))
        else:
            self.odd.append(Path(entry.path))


def _session_logs(session_dir: Path, found: Walk) -> None:
    for entry in _entries(session_dir):
        if entry.name in SESSION_LOG_NAMES and not _is_dir(entry):
            found.take(entry)


def _project_logs(project_dir: Path, found: Walk) -> None:
    for child in _entries(project_dir):
        if _is_dir(child):
            _session_logs(Path(child.path), found)


def walk_root(directory: Path) -> Walk:
    """Logs of a root, a project directory, a session directory or a plain directory,
    each list sorted by path, in one pass."""
    found = Walk()
    if _is_project_dir(directory):
        _project_logs(directory, found)
        return found
    for child in _entries(directory):
        if _is_dir(child):
            if is_project_name(child.name):
                _project_logs(Path(child.path), found)
        elif child.name.endswith(LOG_SUFFIXES):
            found.take(child)
    found.files.sort()
    found.odd.sort()
    return found


def file_key(path: Path) -> tuple[int, int] | str:
    """A file's identity for "each file once": its device and inode (one ``stat``; a
    path and a link to it are one file), or the path itself when it cannot be stat'ed."""
    try:
        st = os.stat(path)
    except OSError:
        return os.path.realpath(path)
    return (st.st_dev, st.st_ino)


def discover(paths: Iterable[Path | str]) -> list[Path]:
    """Every session log file under ``paths``, deterministic and without duplicates.

    Each argument contributes its files sorted by path; arguments keep their order and
    a file reached twice is listed once. A session directory holding both
    ``session.jsonl`` and ``session.jsonl.zstd`` yields both (which one is current
    cannot be known from the files). A missing path raises ``FileNotFoundError``.
    """
    seen: set[tuple[int, int] | str] = set()
    out: list[Path] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            found = walk_root(path).files
        elif path.exists():
            found = [path]
        else:
            raise FileNotFoundError(f"no such session log or directory: {path}")
        for log in found:
            key = file_key(log)
            if key not in seen:
                seen.add(key)
                out.append(log)
    return out


def decode_segment(segment: str) -> str | None:
    """Invert dsh's ``encodeSegment`` (``~XXXX`` UTF-16 code-unit escapes).

    Returns ``None`` when ``segment`` is not something ``encodeSegment`` can produce.
    Lone surrogates survive, as they do in the JavaScript string the id came from.
    """
    if not _SEGMENT.fullmatch(segment):
        return None
    units = bytearray()
    pos = 0
    for match in _ESCAPE.finditer(segment):
        units += segment[pos : match.start()].encode("utf-16-le")
        units += int(match.group(1), 16).to_bytes(2, "little")
        pos = match.end()
    units += segment[pos:].encode("utf-16-le")
    return units.decode("utf-16-le", errors="surrogatepass")


def implied_session_id(path: Path) -> str | None:
    """The session id a root-layout path implies, or ``None`` outside that layout.

    ``<root>/--<key>--/<encoded id>/session.jsonl[.zstd]`` implies the decoded id; the
    header of such a file must carry exactly that id.
    """
    if path.name not in SESSION_LOG_NAMES:
        return None
    session_dir = path.parent
    if not _is_project_dir(session_dir.parent):
        return None
    return decode_segment(session_dir.name)
