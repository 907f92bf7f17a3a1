"""The parent of a Codex review subagent, which its rollout does not name.

Codex runs ``/review`` as a subagent thread whose ``session_meta`` says
``source: {"subagent": "review"}`` and nothing about who started it. The session that
started it is in review mode meanwhile: its rollout holds an ``event_msg``
``entered_review_mode`` before the review thread starts and an ``exited_review_mode``
after it. The rule, in order:

1. candidates: the other ``rollout-*.jsonl`` files of the same sessions tree (the
   ``YYYY/MM/DD`` root the child's file lies in, else its directory) written since the
   child started (a file's modification time: a parent still in review mode when the
   child starts writes its ``exited_review_mode`` later), whose first ``session_meta``
   has the child's ``cwd``;
2. in each, the review window open when the child started: the latest
   ``entered_review_mode`` at or before the child's creation time with no
   ``exited_review_mode`` between them; markers after a second ``session_meta`` line
   are a fork's copy of another rollout and do not count;
3. the parent is the candidate whose window opened last (ties: the smaller id); none
   means no parent (the review session is a root).

Only review subagents pay for this: a byte search skips files without a marker.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Final

from indexer.errors import LogValidationError
from indexer.logs.files import open_regular, walk
from indexer.logs.importers.common import iso_ms
from indexer.logs.reader import parse_line

__all__ = ["review_parent"]

_ENTERED: Final = b"entered_review_mode"
_EXITED: Final = b"exited_review_mode"


def _tree_root(path: Path) -> Path:
    day, month, year = path.parent, path.parent.parent, path.parent.parent.parent
    if day.name.isdigit() and month.name.isdigit() and year.name.isdigit():
        return year.parent
    return path.parent


def _window(data: bytes, cwd: Any, created: int) -> tuple[str, int] | None:
    """``(session id, window start)`` of a candidate rollout's bytes, or ``None``."""
    sid: str | None = None
    start: int | None = None
    for n, line in enumerate(data.split(b"\n")):
        if n > 0 and sid is None:
            return None
        if not line.strip() or (
            n > 0 and _ENTERED not in line and _EXITED not in line and b"session_meta" not in line
        ):
            continue
        try:
            record = parse_line(line)
        except LogValidationError:
            continue
        if not isinstance(record, dict):
            continue
        payload = record.get("payload")
        if not isinstance(payload, dict):
            continue
        kind = record.get("type")
        if kind == "session_meta":
            if sid is not None:
                break  # a fork's copy of its origin's lines follows
            if payload.get("cwd") != cwd or not isinstance(payload.get("id"), str):
                return None
            sid = payload["id"]
            continue
        if kind != "event_msg":
            continue
        time = iso_ms(record.get("timestamp"))
        if time is None:
            continue
        if time > created:
            break
        if payload.get("type") == "entered_review_mode":
            start = time
        elif payload.get("type") == "exited_review_mode":
            start = None
    return (sid, start) if sid is not None and start is not None else None


def review_parent(path: Path, child_id: str, cwd: Any, created: int) -> str | None:
    """The session whose review window holds the review rollout ``path`` (module
    docstring), or ``None``."""
    if not isinstance(cwd, str):
        return None
    files, _skipped = walk(
        _tree_root(path),
        lambda p: p.name.startswith("rollout-") and p.name.endswith(".jsonl"),
        max_depth=4,
    )
    best: tuple[int, str] | None = None
    for candidate in files:
        if candidate == path:
            continue
        try:
            if os.stat(candidate).st_mtime_ns // 1_000_000 < created:
                continue
            with open_regular(candidate) as f:
                data = f.read()
        except OSError:
            continue
        if _ENTERED not in data:
            continue
        found = _window(data, cwd, created)
        if found is None or found[0] == child_id:
            continue
        sid, start = found
        if best is None or start > best[0] or (start == best[0] and sid < best[1]):
            best = (start, sid)
    return best[1] if best is not None else None
