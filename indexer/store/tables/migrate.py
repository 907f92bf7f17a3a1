"""In-place migration of an older data dir, run when the writer opens it.

Version 1 kept one uncompressed row per raw event, keyed by the text session id; version
2 keeps the events in compressed blocks (``indexer.store.blocks.format``) and keys the hot
tables by an integer session key; version 3 records the signature (size, mtime) a watched
log had when it was applied (``watched_sources``), so a restarted watcher reads only the
logs that changed. The Tantivy index is the same in all three.

The whole migration is one SQLite transaction: a crash or an error at any point leaves
the older tables exactly as they were (the next open starts over), and readers see
either the old tables or the new ones, never a mix. After the version 1 step, ``VACUUM``
returns the pages of the old tables to the file system; when it is interrupted, the dir
is migrated already and only larger than it needs to be. A second open finds the current
version and does nothing.

While the writer migrates, readers of the new release answer with a clear error (the
version check of ``indexer.query.service``) until the migration commits.

Within a schema version, :func:`rename_subagent_ids` gives imported Claude Code
subagents stored as ``<parent id>:agent-<agent id>`` the id the importer now writes
(``child_session_id``: no other session's id inside it), once per dir (meta key
``subagent_ids``), in one transaction with the index format record cleared, so the
writer rebuilds the index (whose documents name the session) from the renamed rows.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterator
from typing import Any

import orjson

from indexer.failpoints import DISARMED, FailPoints
from indexer.store.blocks.format import LEVEL, Codec, StoredEvent, shipped_dictionary
from indexer.store.blocks.table import EventBlocks
from indexer.store.tables.schema import (
    SCHEMA_VERSION,
    SchemaVersionError,
    encode_surface,
    execute_script,
    install_dictionary,
    schema_script,
    source_runs,
    stored_version,
)

log = logging.getLogger("sessionq.store")

_V1_TABLES = ("sessions", "events", "sources", "replacements")
_V1_INDEXES = ("sessions_parent", "sessions_cwd")


def migrate(conn: sqlite3.Connection, version: str, failpoints: FailPoints = DISARMED) -> None:
    """Bring a database of schema ``version`` to ``SCHEMA_VERSION`` (see the module)."""
    if version not in ("1", "2"):
        raise SchemaVersionError(
            f"the data dir has store schema version {version}; this release reads version "
            f"{SCHEMA_VERSION} and migrates versions 1 and 2"
        )
    log.info("migrating the data dir from store schema version %s to %s", version, SCHEMA_VERSION)
    conn.execute("BEGIN IMMEDIATE")
    try:
        current = stored_version(conn)  # another writer may have migrated meanwhile
        if current == "1":
            _v1_to_v2(conn, failpoints)
        if current in ("1", "2"):
            _v2_to_v3(conn)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    if version != "1":
        return
    try:
        conn.execute("VACUUM")
    except sqlite3.Error as exc:
        log.warning("VACUUM after the migration failed (the dir is migrated): %s", exc)


SUBAGENT_IDS_KEY = "subagent_ids"
SUBAGENT_IDS = "uuid5"
_OLD_CHILD = ":agent-"


def rename_subagent_ids(conn: sqlite3.Connection) -> int:
    """Rename the imported subagents of an older release (module docstring); returns
    how many were renamed. A dir that holds the new id already keeps both rows (the
    old one is erased by the user, as any session)."""
    from indexer.logs.importers.common import CLAUDE_CODE, child_session_id
    from indexer.store.maintenance.index_format import INDEX_FORMAT_KEY

    conn.execute("BEGIN IMMEDIATE")
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = ?", (SUBAGENT_IDS_KEY,)).fetchone()
        renamed = 0 if row is not None else _rename(conn, CLAUDE_CODE, child_session_id)
        if renamed:
            conn.execute("DELETE FROM meta WHERE key = ?", (INDEX_FORMAT_KEY,))
            log.info("renamed %d imported subagent sessions; the index is rebuilt", renamed)
        conn.execute(
            "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO NOTHING",
            (SUBAGENT_IDS_KEY, SUBAGENT_IDS),
        )
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return renamed


def _rename(conn: sqlite3.Connection, agent: str, new_id: Any) -> int:
    rows = conn.execute(
        "SELECT id, header FROM sessions WHERE instr(id, ?) > 0"
        " AND json_extract(header, '$.sourceAgent') = ?",
        (_OLD_CHILD, agent),
    ).fetchall()
    renamed = 0
    for old, header_json in rows:
        header = orjson.loads(header_json)
        parent, _, agent_id = str(old).rpartition(_OLD_CHILD)
        if not agent_id or header.get("parentSession") != parent:
            continue
        new = new_id(parent, agent_id)
        if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (new,)).fetchone():
            continue
        header["id"] = new
        conn.execute(
            "UPDATE sessions SET id = ?, header = ? WHERE id = ?",
            (new, orjson.dumps(header).decode(), old),
        )
        conn.execute(
            "UPDATE sessions SET parent = ?, header = json_set(header, '$.parentSession', ?)"
            " WHERE parent = ?",
            (new, new, old),
        )
        conn.execute("UPDATE watched_sources SET session_id = ? WHERE session_id = ?", (new, old))
        renamed += 1
    return renamed


def _v1_to_v2(conn: sqlite3.Connection, failpoints: FailPoints) -> None:
    for index in _V1_INDEXES:
        conn.execute(f"DROP INDEX IF EXISTS {index}")
    for table in _V1_TABLES:
        conn.execute(f"ALTER TABLE {table} RENAME TO {table}_v1")
    execute_script(conn, schema_script())
    did = install_dictionary(conn, shipped_dictionary())
    conn.executemany(
        "INSERT INTO sessions(id, header, cwd, parent, created_at, live, next_seq, surface,"
        " last_step_start, title, held, last_time) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        _sessions(conn),
    )
    blocks = EventBlocks(conn, Codec({did: shipped_dictionary()}), did)
    blocks.sealed_level = LEVEL  # the dir's first training recompresses them all at 9
    keys = conn.execute("SELECT key, id FROM sessions ORDER BY key").fetchall()
    for n, (key, sid) in enumerate(keys):
        blocks.append(key, list(_events(conn, sid)))
        if n == len(keys) // 2:
            failpoints.reach("migrate-halfway")
    conn.execute(
        "INSERT INTO replaced(session_key, seq, replaced_by) SELECT s.key, e.seq, e.replaced_by"
        " FROM events_v1 e JOIN sessions s ON s.id = e.session_id"
        " WHERE e.replaced_by IS NOT NULL"
    )
    conn.executemany(
        "INSERT OR IGNORE INTO source_runs(session_key, first, last, seq) VALUES (?, ?, ?, ?)",
        _source_runs(conn),
    )
    conn.execute(
        "INSERT INTO replacements(session_key, seq, start_seq, end_seq, shadowed)"
        " SELECT s.key, r.seq, r.start_seq, r.end_seq, r.shadowed"
        " FROM replacements_v1 r JOIN sessions s ON s.id = r.session_id"
    )
    for table in _V1_TABLES:
        conn.execute(f"DROP TABLE {table}_v1")


def _v2_to_v3(conn: sqlite3.Connection) -> None:
    """The watched log's signature: unknown (NULL) for what was applied before, so each
    such log is read once more, then recorded. Every session imported from another
    agent's log so far is a stale import: its events are in the older release's mapping
    (a read of its log replaces it)."""
    columns = {row[1] for row in conn.execute("PRAGMA table_info(watched_sources)")}
    for column in ("size", "mtime_ns"):
        if column not in columns:
            conn.execute(f"ALTER TABLE watched_sources ADD COLUMN {column} INTEGER")
    conn.execute(
        "CREATE TABLE IF NOT EXISTS stale_imports (session_key INTEGER PRIMARY KEY) WITHOUT ROWID"
    )
    conn.execute(
        "INSERT OR IGNORE INTO stale_imports(session_key) SELECT key FROM sessions"
        " WHERE json_extract(header, '$.sourceAgent') IS NOT NULL"
    )
    conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (SCHEMA_VERSION,))


def _sessions(conn: sqlite3.Connection) -> Iterator[tuple[Any, ...]]:
    for row in conn.execute(
        "SELECT id, header, cwd, parent, created_at, live, next_seq, surface,"
        " last_step_start, title, held, (SELECT e.time FROM events_v1 e"
        " WHERE e.session_id = s.id AND e.seq = s.next_seq - 1)"
        " FROM sessions_v1 s ORDER BY created_at, id"
    ).fetchall():
        yield (*row[:7], encode_surface(orjson.loads(row[7])), *row[8:])


def _events(conn: sqlite3.Connection, session_id: str) -> Iterator[StoredEvent]:
    """A session's version 1 rows; the shadow marks move to ``replaced``."""
    for seq, typ, time, surface, indexed, raw in conn.execute(
        "SELECT seq, type, time, surface, indexed, raw FROM events_v1 WHERE session_id = ?"
        " ORDER BY seq",
        (session_id,),
    ):
        yield StoredEvent(seq, typ, time, surface, bool(indexed), bytes(raw))


def _source_runs(conn: sqlite3.Connection) -> Iterator[tuple[int, int, int, int]]:
    current: tuple[int, int] | None = None
    cited: list[int] = []
    for key, seq, source_seq in conn.execute(
        "SELECT s.key, r.seq, r.source_seq FROM sources_v1 r JOIN sessions s"
        " ON s.id = r.session_id ORDER BY s.key, r.seq"
    ):
        if current is not None and current != (key, seq):
            yield from ((current[0], f, last, current[1]) for f, last in source_runs(cited))
            cited = []
        current = (key, seq)
        cited.append(source_seq)
    if current is not None:
        yield from ((current[0], f, last, current[1]) for f, last in source_runs(cited))
