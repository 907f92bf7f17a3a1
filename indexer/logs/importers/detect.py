"""Which agent wrote a log, and where the logs under a root are.

A given path is a file (its format read from its first line, or forced) or a directory:
a dsh root (``indexer.logs.roots``), a Claude Code tree (``~/.claude``,
``~/.claude/projects``, or one project directory: every ``*.jsonl`` plus
``<session>/subagents/*.jsonl``), or a Codex tree (``~/.codex``: ``sessions/`` and
``archived_sessions/``, or any directory holding ``rollout-*.jsonl`` files, walked to
any depth). ``format`` forces one reading for every path; without it each directory is
recognised by its layout and each file by its first line.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal, get_args

from indexer.errors import LogValidationError
from indexer.logs.importers.claude_code import CLAUDE_RECORD_TYPES, read_claude_code, subagent_of
from indexer.logs.importers.codex import read_codex
from indexer.logs.jsonl import ZSTD_MAGIC
from indexer.logs.reader import SessionLog, parse_line, read_log
from indexer.logs.roots import discover, implied_session_id

__all__ = ["FORMATS", "LogFormat", "LogSource", "detect_file", "discover_sources", "read_source"]

LogFormat = Literal["dsh", "claude-code", "codex"]
FORMATS: Final[tuple[LogFormat, ...]] = get_args(LogFormat)
_PEEK_BYTES: Final = 1 << 16


@dataclass(frozen=True, slots=True)
class LogSource:
    """One log file and the format it is read as."""

    path: Path
    format: LogFormat


def _first_line(path: Path) -> object:
    """The first line of a plain file, decoded, or ``None`` (a bounded read of
    ``_PEEK_BYTES``). A zstd file is a dsh log: neither Claude Code nor Codex writes
    one, so it is never decompressed here."""
    try:
        with path.open("rb") as f:
            head = f.read(_PEEK_BYTES)
        if head.startswith(ZSTD_MAGIC):
            return {"type": "session"}
        line = head.split(b"\n", 1)[0]
        return parse_line(line) if line.strip() else None
    except (OSError, LogValidationError):
        return None


def detect_file(path: Path) -> LogFormat:
    """The format of one file from its first line: a dsh header (``"type":"session"``),
    a Codex line (``timestamp`` + ``payload``), or a Claude Code record (``sessionId``
    or a known record type). Unreadable or unknown first lines fall back to the file's
    name, then to dsh (whose reader then reports what is wrong)."""
    obj = _first_line(path)
    if isinstance(obj, dict):
        kind = obj.get("type")
        if kind == "session":
            return "dsh"
        if kind == "session_meta" or ("payload" in obj and "timestamp" in obj):
            return "codex"
        if "sessionId" in obj or kind in CLAUDE_RECORD_TYPES:
            return "claude-code"
    if path.name.startswith("rollout-"):
        return "codex"
    if subagent_of(path) is not None or ".claude" in path.parts:
        return "claude-code"
    return "dsh"


def _codex_files(root: Path) -> list[Path]:
    bases = [root / "sessions", root / "archived_sessions"] if root.name == ".codex" else [root]
    out: list[Path] = []
    for base in bases:
        if base.is_dir():
            out.extend(p for p in base.rglob("rollout-*.jsonl") if not p.is_dir())
    return sorted(out)


def _project_files(project: Path) -> list[Path]:
    # Not only regular files: a dangling link is listed, so reading it reports why.
    top = sorted(p for p in project.glob("*.jsonl") if not p.is_dir())
    nested = sorted(p for p in project.glob("*/subagents/*.jsonl") if not p.is_dir())
    return top + nested


def _claude_files(root: Path) -> list[Path]:
    if (root / "projects").is_dir():
        root = root / "projects"
    if any(root.glob("*.jsonl")) or any(root.glob("*/subagents/*.jsonl")):
        return _project_files(root)
    out: list[Path] = []
    for project in sorted(root.iterdir()):
        if project.is_dir():
            out.extend(_project_files(project))
    return out


def _tree_format(root: Path) -> LogFormat | None:
    """The format a directory's layout shows, or ``None`` (a dsh root or a plain
    directory, whose files are then recognised one by one)."""
    name, parent = root.name, root.parent.name
    if name == ".codex" or (name in ("sessions", "archived_sessions") and parent == ".codex"):
        return "codex"
    if name == ".claude" or (name == "projects" and parent == ".claude"):
        return "claude-code"
    if any(root.glob("rollout-*.jsonl")) or any(root.glob("[0-9]*/*/*/rollout-*.jsonl")):
        return "codex"
    if any(root.glob("*/subagents/*.jsonl")) or any(root.glob("*/*/subagents/*.jsonl")):
        return "claude-code"
    return None


def _sources(path: Path, forced: LogFormat | None) -> list[LogSource]:
    if not path.is_dir():
        if not path.exists():
            raise FileNotFoundError(f"no such session log or directory: {path}")
        return [LogSource(path, forced or detect_file(path))]
    fmt = forced or _tree_format(path)
    if fmt == "codex":
        return [LogSource(p, "codex") for p in _codex_files(path)]
    if fmt == "claude-code":
        return [LogSource(p, "claude-code") for p in _claude_files(path)]
    files = discover([path])
    if fmt == "dsh":
        return [LogSource(p, "dsh") for p in files]
    if not files:  # a copied Claude Code projects directory: <project>/<session>.jsonl
        nested = sorted(path.glob("*/*.jsonl"))
        if nested and detect_file(nested[0]) == "claude-code":
            return [LogSource(p, "claude-code") for p in _claude_files(path)]
    # Files of a dsh root layout are dsh logs; a plain directory's are recognised each.
    return [
        LogSource(p, "dsh" if implied_session_id(p) is not None else detect_file(p)) for p in files
    ]


def discover_sources(
    paths: Iterable[Path | str], format: LogFormat | None = None
) -> list[LogSource]:
    """Every log under ``paths`` with its format: deterministic, each file once (the
    first path that reaches it wins), arguments in order. A missing path raises
    ``FileNotFoundError``, as :func:`indexer.logs.roots.discover` does."""
    seen: set[Path] = set()
    out: list[LogSource] = []
    for given in paths:
        for source in _sources(Path(given), format):
            key = source.path.resolve()
            if key not in seen:
                seen.add(key)
                out.append(source)
    return out


def read_source(source: LogSource | Path) -> SessionLog:
    """Read one log as its format says (a bare path is a dsh log); raises
    ``LogRejectedError`` for a file that cannot be read, ``OSError`` for I/O errors."""
    if isinstance(source, Path):
        return read_log(source)
    if source.format == "claude-code":
        return read_claude_code(source.path)
    if source.format == "codex":
        return read_codex(source.path)
    return read_log(source.path)
