"""One place that names why a write to the data dir failed, in one line.

A full disk shows up as ``sqlite3.OperationalError("database or disk is full")``
(``SQLITE_FULL``) from SQLite and as an ``OSError`` with ``ENOSPC`` (or Tantivy's error
text "No space left on device") from the index, often wrapped or chained behind a
second error. ``describe`` walks the chain and names the real cause: ``disk full: …``
for those, else the error itself.
"""

from __future__ import annotations

import errno
import sqlite3
from collections.abc import Iterator

DISK_FULL = "disk full"
_SQLITE_FULL_TEXT = "database or disk is full"
_ENOSPC_TEXT = "No space left on device"


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _disk_full(exc: BaseException) -> str | None:
    for e in _chain(exc):
        if isinstance(e, sqlite3.Error) and (
            getattr(e, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL
            or _SQLITE_FULL_TEXT in str(e)
        ):
            return f"{DISK_FULL}: SQLite could not write ({_SQLITE_FULL_TEXT})"
        if isinstance(e, OSError) and e.errno == errno.ENOSPC:
            return f"{DISK_FULL}: the index could not write ({e.strerror or _ENOSPC_TEXT})"
        if _ENOSPC_TEXT in str(e):
            return f"{DISK_FULL}: the index could not write ({_ENOSPC_TEXT})"
    return None


def is_disk_full(exc: BaseException) -> bool:
    return _disk_full(exc) is not None


def describe(exc: BaseException, *, typed: bool = True) -> str:
    """``disk full: …`` when a full disk is anywhere in the chain, else the error's first
    line (``Type: message`` when ``typed``)."""
    full = _disk_full(exc)
    if full is not None:
        return full
    text = str(exc).splitlines()[0] if str(exc) else ""
    if not typed:
        return text or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
