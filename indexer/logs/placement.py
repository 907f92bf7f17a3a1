"""Where a new file or directory under a watched root belongs, without walking the root.

A file notification names the path that appeared. In a dsh root the path alone says
what it is: ``<root>/--<key>--/<id>/session.jsonl[.zstd]`` is a session's log, a new
project or session directory holds exactly the logs of that layout below it, and a
``*.jsonl`` at the top of a root that holds logs already is read by its content — the
same sources a walk of the root would give. Other agents' layouts (and a directory that
is not a root yet) decide by what else is there: ``place`` answers None and the caller
walks the root.
"""

from __future__ import annotations

from pathlib import Path

from indexer.logs.importers.detect import LogFormat, LogSource, detect_file
from indexer.logs.importers.trees import TreeFormat
from indexer.logs.roots import LOG_SUFFIXES, SESSION_LOG_NAMES, is_project_name, walk_root


def place(
    root: Path,
    layout: TreeFormat | None,
    forced: LogFormat | None,
    path: Path,
    *,
    has_logs: bool,
) -> list[LogSource] | None:
    """The logs ``path`` adds under ``root`` (module docstring), or None: only a walk of
    the root can tell. ``has_logs``: the root holds logs already (a root without any may
    be a copied Claude Code projects directory, which a walk recognises)."""
    if layout is not None or forced not in (None, "dsh") or not path.is_relative_to(root):
        return None
    rel = path.relative_to(root).parts
    if not rel or (not is_project_name(rel[0]) and len(rel) > 1):
        return None
    try:
        is_dir = path.is_dir()
        is_file = not is_dir and path.is_file()
    except OSError:
        return None
    if is_dir and ((len(rel) == 1 and is_project_name(rel[0])) or len(rel) == 2):
        return [LogSource(p, "dsh") for p in walk_root(path).files]
    if is_file and len(rel) == 3 and rel[2] in SESSION_LOG_NAMES:
        return [LogSource(path, "dsh")]
    if is_file and len(rel) == 1 and path.name.endswith(LOG_SUFFIXES) and has_logs:
        return [LogSource(path, forced or detect_file(path))]
    return None
