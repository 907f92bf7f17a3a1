"""Finding session log files on disk.

Three inputs are understood: a file (taken as is); a dsh persistence root, laid out as
``<root>/--<project key>--/<encoded id>/session.jsonl[.zstd]`` (``_no-cwd`` instead of
the project key for sessions without a cwd); and a plain directory of ``*.jsonl`` /
``*.jsonl.zstd`` files. A project directory or a session directory of a root also works.
Discovery does not recurse beyond that layout, so pointing it at a large tree stays
cheap and predictable.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Final

__all__ = [
    "LOG_SUFFIXES",
    "SESSION_LOG_NAMES",
    "decode_segment",
    "discover",
    "implied_session_id",
    "is_log_file",
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
    name = path.name
    return name == NO_CWD_DIR or (len(name) > 4 and name.startswith("--") and name.endswith("--"))


def _session_logs(session_dir: Path) -> list[Path]:
    return [p for p in (session_dir / n for n in SESSION_LOG_NAMES) if p.is_file()]


def _project_logs(project_dir: Path) -> list[Path]:
    out: list[Path] = []
    for child in sorted(project_dir.iterdir()):
        if child.is_dir():
            out.extend(_session_logs(child))
    return out


def _directory_logs(directory: Path) -> list[Path]:
    """Logs of a root, a project directory, a session directory or a plain directory."""
    if _is_project_dir(directory):
        return _project_logs(directory)
    out: list[Path] = []
    for child in sorted(directory.iterdir()):
        if child.is_dir():
            if _is_project_dir(child):
                out.extend(_project_logs(child))
        elif is_log_file(child):
            out.append(child)
    return sorted(out)


def discover(paths: Iterable[Path | str]) -> list[Path]:
    """Every session log file under ``paths``, deterministic and without duplicates.

    Each argument contributes its files sorted by path; arguments keep their order and
    a file reached twice is listed once. A session directory holding both
    ``session.jsonl`` and ``session.jsonl.zstd`` yields both (which one is current
    cannot be known from the files). A missing path raises ``FileNotFoundError``.
    """
    seen: set[Path] = set()
    out: list[Path] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            found = _directory_logs(path)
        elif path.exists():
            found = [path]
        else:
            raise FileNotFoundError(f"no such session log or directory: {path}")
        for log in found:
            key = log.resolve()
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
