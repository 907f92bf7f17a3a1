"""Where each agent keeps its logs, and the files of a tree laid out that way.

A directory is an agent's tree by its name or its layout (checked in this order):

* Codex: ``.codex``, ``.codex/sessions``, ``.codex/archived_sessions``, or any directory
  holding ``rollout-*.jsonl`` (directly or as ``YYYY/MM/DD/``): every
  ``rollout-*.jsonl`` below;
* Claude Code: ``.claude``, ``.claude/projects``, or any directory holding
  ``*/subagents/*.jsonl``: ``<project>/*.jsonl`` and
  ``<project>/<session>/subagents/*.jsonl``;
* Gemini CLI and Qwen Code: ``.gemini``, ``.qwen``, their ``tmp``, or any directory
  holding ``chats/`` up to two levels down: ``<project>/chats/session-*.json[l]`` and the
  subagents' ``<project>/chats/<parent id>/*.jsonl``;
* OpenCode: ``opencode``, its ``storage``, or any directory holding ``storage/session/``
  or ``session/`` beside ``message/``: ``storage/session/<project>/ses*.json``;
* Copilot CLI: ``.copilot``, ``session-state``, or any directory holding
  ``session-state/`` or ``*/events.jsonl``: ``session-state/<id>/events.jsonl`` and
  ``session-state/<id>.jsonl``.

Every walk is :func:`indexer.logs.files.walk`: symlinked directories are followed once,
a loop ends, and a matching path that is not a regular file is reported as skipped.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Final, Literal

from indexer.logs.files import Skipped, classify, walk

__all__ = ["TreeFormat", "tree_files", "tree_format"]

TreeFormat = Literal["claude-code", "codex", "gemini", "opencode", "copilot"]
Found = tuple[list[Path], list[Skipped]]

_GEMINI_HOMES: Final = (".gemini", ".qwen")


def _is_dir(path: Path) -> bool:
    return classify(path) == "dir"


def _rel(root: Path, path: Path) -> tuple[str, ...]:
    return path.relative_to(root).parts


def _codex(root: Path) -> Found:
    bases = [root / "sessions", root / "archived_sessions"] if root.name == ".codex" else [root]
    files: list[Path] = []
    skipped: list[Skipped] = []
    for base in bases:
        if _is_dir(base):
            found, skip = walk(
                base, lambda p: p.name.startswith("rollout-") and p.name.endswith(".jsonl")
            )
            files += found
            skipped += skip
    return sorted(files), skipped


def _claude(root: Path) -> Found:
    if _is_dir(root / "projects"):
        root = root / "projects"
    # One project directory holds sessions itself; a projects directory holds projects.
    flat = any(p.name.endswith(".jsonl") for p in _entries(root)) or _has(
        root, lambda r: len(r) == 3 and r[1] == "subagents", depth=2
    )
    offset = 0 if flat else 1

    def match(p: Path) -> bool:
        r = _rel(root, p)
        if not p.name.endswith(".jsonl"):
            return False
        return len(r) == 1 + offset or (len(r) == 3 + offset and r[1 + offset] == "subagents")

    files, skipped = walk(root, match, max_depth=2 + offset)
    top = [p for p in files if len(_rel(root, p)) == 1 + offset]
    nested = [p for p in files if len(_rel(root, p)) != 1 + offset]
    return top + nested, skipped


def _gemini(root: Path) -> Found:
    if root.name in _GEMINI_HOMES and _is_dir(root / "tmp"):
        root = root / "tmp"

    def match(p: Path) -> bool:
        if p.parent.name == "chats":
            return p.name.startswith("session-") and p.name.endswith((".json", ".jsonl"))
        return p.parent.parent.name == "chats" and p.name.endswith(".jsonl")

    return walk(root, match, max_depth=4)


def _opencode(root: Path) -> Found:
    for base in (root / "storage" / "session", root / "session", root):
        if base.name == "session" and _is_dir(base):
            return walk(
                base, lambda p: p.name.startswith("ses") and p.name.endswith(".json"), max_depth=1
            )
    return [], []


def _copilot(root: Path) -> Found:
    if _is_dir(root / "session-state"):
        root = root / "session-state"

    def match(p: Path) -> bool:
        r = _rel(root, p)
        return (len(r) == 2 and r[1] == "events.jsonl") or (len(r) == 1 and r[0].endswith(".jsonl"))

    return walk(root, match, max_depth=1)


_TREES: Final[dict[TreeFormat, Callable[[Path], Found]]] = {
    "codex": _codex,
    "claude-code": _claude,
    "gemini": _gemini,
    "opencode": _opencode,
    "copilot": _copilot,
}


def _entries(root: Path) -> list[Path]:
    try:
        return sorted(root.iterdir())
    except OSError:
        return []


def _has(root: Path, test: Callable[[tuple[str, ...]], bool], depth: int) -> bool:
    """Whether a path within ``depth`` directory levels of ``root`` passes ``test`` (on
    its parts relative to ``root``). One ``getdents`` pass per directory: the entry types
    come with it; a symlinked directory is followed, a loop is not (each directory once)."""
    level: list[tuple[Path, tuple[str, ...]]] = [(root, ())]
    seen: set[tuple[int, int]] = set()
    for _ in range(depth + 1):
        nxt: list[tuple[Path, tuple[str, ...]]] = []
        for directory, parts in level:
            try:
                st = os.stat(directory)
                with os.scandir(directory) as it:
                    entries = sorted(it, key=lambda e: e.name)
            except OSError:
                continue
            if (st.st_dev, st.st_ino) in seen:
                continue
            seen.add((st.st_dev, st.st_ino))
            for entry in entries:
                rel = (*parts, entry.name)
                if test(rel):
                    return True
                try:
                    is_dir = entry.is_dir()
                except OSError:
                    is_dir = False
                if is_dir:
                    nxt.append((Path(entry.path), rel))
        level = nxt
    return False


def tree_format(root: Path) -> TreeFormat | None:
    """The agent whose layout ``root`` shows (module table), or ``None`` (a dsh root or
    a plain directory, whose files are then recognised one by one)."""
    name, parent = root.name, root.parent.name
    if name == ".codex" or (name in ("sessions", "archived_sessions") and parent == ".codex"):
        return "codex"
    if name == ".claude" or (name == "projects" and parent == ".claude"):
        return "claude-code"
    if name in _GEMINI_HOMES or (name == "tmp" and parent in _GEMINI_HOMES):
        return "gemini"
    if name == "opencode" or (name == "storage" and parent == "opencode"):
        return "opencode"
    if name in (".copilot", "session-state"):
        return "copilot"
    if _has(root, lambda r: r[-1].startswith("rollout-") and r[-1].endswith(".jsonl"), 3):
        return "codex"
    if _has(root, lambda r: len(r) >= 3 and r[-2] == "subagents", 3):
        return "claude-code"
    if _has(root, lambda r: len(r) <= 3 and r[-1] == "chats", 2):
        return "gemini"
    if _is_dir(root / "storage" / "session") or (
        _is_dir(root / "session") and _is_dir(root / "message")
    ):
        return "opencode"
    if _is_dir(root / "session-state") or _has(
        root, lambda r: len(r) == 2 and r[1] == "events.jsonl", 1
    ):
        return "copilot"
    return None


def tree_files(root: Path, fmt: TreeFormat) -> Found:
    """The log files of ``root`` read as a tree of ``fmt``, and the paths skipped."""
    return _TREES[fmt](root)
