"""The data directory: the event-sourced store every role reads and one writer writes.

Sub-packages, one concern each:

* ``records`` — the record path and its commit: ``Store`` (``Store.apply``, the one place
  a record is applied and its failure classified), the writer (record -> rows + index
  documents), write plans, the commit protocol;
* ``tables`` — SQLite: connections, the writer's table access, the transaction and its
  one owner, the schema and its migration;
* ``blocks`` — raw events in zstd blocks per session, and the dir's own dictionaries;
* ``maintenance`` — erasure made physical (purge), retention, rebuilding an index of
  another format;
* ``tantivy`` — the only importer of tantivy: analyzer, schema, queries, ranking,
  highlighting and snippets.

``layout`` names the dir's files, ``private`` makes them owner-only, ``locks`` its file
locks, ``failure`` why a write failed, ``bounds`` how much an open batch may hold.
"""

__all__ = [
    "blocks",
    "bounds",
    "failure",
    "layout",
    "locks",
    "maintenance",
    "private",
    "records",
    "tables",
    "tantivy",
]
