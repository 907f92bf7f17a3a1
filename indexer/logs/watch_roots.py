"""What a log watcher (``indexer.logs.watch``) walks: its roots, and the logs under
them, keyed as the watcher tracks them (``LogSource.key``: a file, or one session of an
Aider history).

Roots of one format are walked together (a Gemini CLI project hash is resolved against
every path given); a failing walk is retried root by root, so one bad root costs only
itself. A path the walk skipped (a FIFO, a symlink loop) is told to ``note`` once per
walk.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from indexer.logs.importers.aider_file import HISTORY_NAME
from indexer.logs.importers.detect import LogFormat, LogSource, discover_report
from indexer.logs.importers.trees import TreeFormat

__all__ = ["Key", "WatchRoot", "discover_roots", "may_be_a_log"]

Key = tuple[Path, int]
"""``LogSource.key``: the file, and the session's ordinal in it (-1: the file's only)."""
_LOG_NAMES = (".jsonl", ".jsonl.zstd", ".json", HISTORY_NAME)


@dataclass(frozen=True, slots=True)
class WatchRoot:
    """A path to watch and the format its logs are read as (None: recognised)."""

    path: Path
    format: LogFormat | None = None


def discover_roots(
    roots: Sequence[WatchRoot],
    layout: Callable[[Path], TreeFormat | None],
    note: Callable[[str, str], None],
) -> tuple[dict[Key, LogSource], list[Path]]:
    """Every log under ``roots``, and the roots whose walk failed (module docstring);
    ``layout``: a root's agent layout (probed once by the caller), ``note(path,
    reason)``: a path not read, and why."""
    found: dict[Key, LogSource] = {}
    failed: list[Path] = []
    groups: dict[LogFormat | None, list[Path]] = {}
    for root in roots:
        groups.setdefault(root.format, []).append(root.path)
    for fmt, paths in groups.items():
        trees = {p: layout(p) for p in paths} if fmt is None else None
        try:
            reports = [discover_report(paths, fmt, trees=trees)]
        except (OSError, RuntimeError, ValueError):
            reports = []
            for path in paths:
                try:
                    reports.append(discover_report([path], fmt, trees=trees))
                except (OSError, RuntimeError, ValueError) as exc:
                    note(str(path), f"{path}: cannot walk: {exc}")
                    failed.append(path)
        for report in reports:
            for skipped in report.skipped:
                note(str(skipped.path), str(skipped))
            for source in report.sources:
                found.setdefault(source.key, source)
    return found, failed


def may_be_a_log(path: Path, tracked: Iterable[Key]) -> bool:
    """Whether a changed path no log is tracked at may matter to a walk: a directory, a
    file that could be a log (a new session), or a path that is gone under which logs
    were tracked (a removed directory of logs)."""
    if not os.path.lexists(path):
        return any(key[0].is_relative_to(path) for key in tracked)
    return path.is_dir() or path.name.endswith(_LOG_NAMES)
