"""How many secrets the writer redacted, per session and kind (``sessionq stats``).

A row counts what the writer kept out: of the indexed text (``on``), or of the stored
events and their indexed text (``store``). Rows are per session so that erasing a
session (``StoreWriter.delete``, retention) erases its counts with it: no count outlives
the data it was made from. The table is additive (in ``schema.sql``, without a new schema
version): the writer creates it when it opens a dir that lacks it, and a reader finds no
row until then.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Mapping
from typing import Final

__all__ = ["TABLE", "add_counts", "ensure_table", "reset_counts", "totals"]

TABLE: Final = "redactions"


def ensure_table(conn: sqlite3.Connection) -> None:
    """Create the table (as ``schema.sql`` defines it) in a dir that lacks it: the
    schema's statements are all ``IF NOT EXISTS``."""
    from indexer.store.tables.schema import execute_script, schema_script

    execute_script(conn, schema_script())


def add_counts(conn: sqlite3.Connection, session_id: str, counts: Mapping[str, int]) -> None:
    """Add ``counts`` (kind -> secrets) to the session's rows (in the caller's savepoint)."""
    for kind, n in counts.items():
        if n:
            conn.execute(
                "INSERT INTO redactions(session_key, kind, count)"
                " SELECT key, ?, ? FROM sessions WHERE id = ?"
                " ON CONFLICT(session_key, kind) DO UPDATE SET count = count + excluded.count",
                (kind, n, session_id),
            )


def reset_counts(conn: sqlite3.Connection, session_id: str) -> None:
    conn.execute(
        "DELETE FROM redactions WHERE session_key = (SELECT key FROM sessions WHERE id = ?)",
        (session_id,),
    )


def totals(conn: sqlite3.Connection) -> dict[str, int]:
    """Secrets redacted per kind over the stored sessions (none before the table exists)."""
    exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (TABLE,)
    ).fetchone()
    if exists is None:
        return {}
    out: Counter[str] = Counter()
    for kind, n in conn.execute("SELECT kind, SUM(count) FROM redactions GROUP BY kind"):
        out[str(kind)] += int(n)
    return dict(sorted(out.items()))
