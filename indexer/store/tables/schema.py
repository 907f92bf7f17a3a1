"""The SQLite schema's lifecycle: create it in a new database, recognize its version,
migrate an older one in place (``indexer.store.tables.migrate``), refuse a newer one; and the
compact encodings of the ``sessions`` and ``source_runs`` columns."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from importlib import resources
from typing import Final

from indexer.errors import PERSISTENCE_FAILED, SessionqError
from indexer.failpoints import DISARMED, FailPoints
from indexer.store.blocks.format import NO_DICTIONARY, Codec, dictionary_id, shipped_dictionary
from indexer.store.maintenance.index_format import record_index_format

SCHEMA_VERSION: Final = "3"
DICTIONARY_KEY: Final = "zstd_dict_id"


def encode_surface(nodes: Sequence[int]) -> bytes:
    """Fold nodes as zigzag varints of the differences (one or two bytes a node)."""
    out = bytearray()
    prev = 0
    for node in nodes:
        delta = node - prev
        prev = node
        value = (delta << 1) ^ (delta >> 63)
        while value > 0x7F:
            out.append((value & 0x7F) | 0x80)
            value >>= 7
        out.append(value)
    return bytes(out)


def decode_surface(data: bytes) -> list[int]:
    nodes: list[int] = []
    prev = value = shift = 0
    for byte in data:
        value |= (byte & 0x7F) << shift
        if byte & 0x80:
            shift += 7
            continue
        prev += (value >> 1) ^ -(value & 1)
        nodes.append(prev)
        value = shift = 0
    return nodes


def source_runs(seqs: Iterable[int]) -> list[tuple[int, int]]:
    """Sorted distinct seqs as maximal runs of consecutive values (first, last)."""
    runs: list[tuple[int, int]] = []
    for seq in sorted(set(seqs)):
        if runs and runs[-1][1] == seq - 1:
            runs[-1] = (runs[-1][0], seq)
        else:
            runs.append((seq, seq))
    return runs


def schema_script() -> str:
    return resources.files("indexer.store.tables").joinpath("schema.sql").read_text()


def stored_version(conn: sqlite3.Connection) -> str | None:
    """``meta.schema_version`` of the database, ``None`` for a new (empty) one."""
    has_meta = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
    ).fetchone()
    if has_meta is None:
        return None
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    return None if row is None else str(row[0])


def install_dictionary(conn: sqlite3.Connection, data: bytes) -> int:
    """Keep a copy of ``data`` with the data and compress new blocks with it."""
    did = dictionary_id(data)
    conn.execute("INSERT OR IGNORE INTO dictionaries(id, data) VALUES (?, ?)", (did, data))
    conn.execute(
        "INSERT INTO meta(key, value) VALUES (?, ?)"
        " ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (DICTIONARY_KEY, str(did)),
    )
    return did


def load_codec(conn: sqlite3.Connection) -> tuple[Codec, int]:
    """The data dir's dictionaries, and the id new blocks are compressed with."""
    codec = Codec({int(i): bytes(d) for i, d in conn.execute("SELECT id, data FROM dictionaries")})
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (DICTIONARY_KEY,)).fetchone()
    return codec, NO_DICTIONARY if row is None else int(row[0])


class SchemaVersionError(SessionqError):
    """The data dir was written by a newer release (or is not a sessionq data dir)."""

    code = PERSISTENCE_FAILED


def execute_script(conn: sqlite3.Connection, script: str) -> None:
    """Run every statement of ``script`` inside the caller's transaction (unlike
    ``executescript``, which commits first)."""
    statement = ""
    for line in script.splitlines(keepends=True):
        statement += line
        if sqlite3.complete_statement(statement):
            conn.execute(statement)
            statement = ""


def open_schema(conn: sqlite3.Connection, failpoints: FailPoints = DISARMED) -> None:
    """Create the schema of a new database, or migrate an older one in place
    (``indexer.store.tables.migrate``, then its imported subagents' ids); a database of a
    newer release is refused."""
    from indexer.store.tables.migrate import migrate, rename_subagent_ids

    version = stored_version(conn)
    if version == SCHEMA_VERSION:
        rename_subagent_ids(conn)
        return
    if version is not None:
        migrate(conn, version, failpoints)
        rename_subagent_ids(conn)
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        if stored_version(conn) is None:  # no other writer created it meanwhile
            execute_script(conn, schema_script())
            conn.execute(
                "INSERT INTO meta(key, value) VALUES ('schema_version', ?)", (SCHEMA_VERSION,)
            )
            install_dictionary(conn, shipped_dictionary())
            record_index_format(conn)  # its index is built by this release
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    rename_subagent_ids(conn)  # nothing to rename: records that none will be
