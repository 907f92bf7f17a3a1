"""The redaction a data dir was written with, recorded in its ``meta`` table, and what
the writer and the readers do with it.

The writer decides what a data dir holds: its ``--redact-secrets`` mode and this
release's rule set (``indexer.redact.rules.ruleset_digest``) are recorded under the key
``redaction`` as ``off``, ``on:<digest>`` or ``store:<digest>``. Readers (``worker``,
``serve``, ``mcp``, ``call --data``) have no setting of their own: they show what the
record says (``reader_redaction``), so the output always agrees with the index it was
searched in. No record (a dir written before redaction existed) reads as ``off``.

When the writer opens a dir (``open_writer``), before the index:

1. a dir without sessions takes the writer's mode, whatever it recorded;
2. the same mode and rule set: nothing to do;
3. ``off`` <-> ``on``, or another rule set: the index is rebuilt from the stored rows
   (``indexer.store.maintenance.index_format.rebuild``) and the new record written only
   after the rebuilt index committed; a crash in between rebuilds again on the next open.
   Meanwhile readers of another rule set refuse the dir (SESSION_QUERY_PERSISTENCE_FAILED),
   as they do for another index format;
4. into or out of ``store`` on a dir that holds sessions: refused with one line
   (SESSION_QUERY_INVALID_CONFIG). Events stored raw cannot be made secret-free by a mode
   flag, and events stored redacted would conflict with raw re-deliveries; such a change
   means ingesting (or restoring) into a new data dir.
"""

from __future__ import annotations

import sqlite3
from typing import Final

from indexer.errors import PERSISTENCE_FAILED, RedactionModeError, SessionQueryError
from indexer.redact.policy import MODES, OFF, Redaction, RedactMode

__all__ = [
    "REDACTION_KEY",
    "RedactionModeError",
    "open_writer",
    "reader_redaction",
    "record_redaction",
    "recorded",
]

REDACTION_KEY: Final = "redaction"


def _digest() -> str:
    from indexer.redact.rules import ruleset_digest

    return ruleset_digest()


def _value(redaction: Redaction) -> str:
    return "off" if not redaction.active else f"{redaction.mode}:{_digest()}"


def recorded(conn: sqlite3.Connection) -> tuple[RedactMode, str | None] | None:
    """The recorded mode and rule-set digest; None when the dir records none."""
    has_meta = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
    ).fetchone()
    if has_meta is None:
        return None
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (REDACTION_KEY,)).fetchone()
    if row is None:
        return None
    mode, _, digest = str(row[0]).partition(":")
    if mode not in MODES:
        raise SessionQueryError(
            f"the data dir records an unknown redaction {row[0]!r}", PERSISTENCE_FAILED
        )
    return mode, digest or None


def record_redaction(conn: sqlite3.Connection, redaction: Redaction) -> None:
    conn.execute(
        "INSERT INTO meta(key, value) VALUES (?, ?)"
        " ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (REDACTION_KEY, _value(redaction)),
    )


def open_writer(conn: sqlite3.Connection, redaction: Redaction) -> bool:
    """Steps 1-4 of the module: whether the index must be rebuilt before the new record
    is written (``record_redaction``); raises ``RedactionModeError`` for step 4. A dir
    that needs no rebuild is recorded at once."""
    stored = recorded(conn)
    was: RedactMode = "off" if stored is None else stored[0]  # no record: unredacted
    current = "off" if stored is None or was == "off" else f"{was}:{stored[1]}"
    empty = conn.execute("SELECT 1 FROM sessions LIMIT 1").fetchone() is None
    if empty or current == _value(redaction):  # 1, 2 (and an older dir opened with off)
        if stored is None or current != _value(redaction):
            record_redaction(conn, redaction)
        return False
    if (was == "store") != redaction.stores_redacted:  # 4
        raise RedactionModeError(
            f"the data dir was written with --redact-secrets {was} and holds sessions; "
            f"{redaction.mode} cannot apply to the events it stores: use --redact-secrets "
            f"{was}, or ingest into a new data dir"
        )
    return True


def reader_redaction(conn: sqlite3.Connection) -> Redaction:
    """What a reader shows: the recorded mode, if its rule set is this release's."""
    stored = recorded(conn)
    if stored is None or stored[0] == "off":
        return OFF
    if stored[1] != _digest():
        raise SessionQueryError(
            f"the data dir's index was built with redaction rules {stored[1]}, this release "
            f"has {_digest()}: the indexer (or `sessionq ingest`) of this release re-indexes "
            "it when it opens the dir",
            PERSISTENCE_FAILED,
        )
    return Redaction(stored[0])
