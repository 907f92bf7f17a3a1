-- sessionq store schema (SQLite, WAL). Version in meta.schema_version; an older data dir
-- is migrated in place when the writer opens it (indexer/store/migrate.py).
CREATE TABLE IF NOT EXISTS meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
);

-- One row per stored session; `key` is the session's integer key in the hot tables.
-- `surface` is the current surface (fold order) as zigzag delta varints, so a later
-- batch continues the fold without replaying the log. `last_time`: the newest event's
-- time (retention reads it instead of the blocks).
CREATE TABLE IF NOT EXISTS sessions (
  key             INTEGER PRIMARY KEY,
  id              TEXT NOT NULL UNIQUE,
  header          TEXT NOT NULL,
  cwd             TEXT,
  parent          TEXT,
  created_at      INTEGER NOT NULL,
  live            INTEGER NOT NULL DEFAULT 0,
  next_seq        INTEGER NOT NULL DEFAULT 0,
  surface         BLOB NOT NULL DEFAULT x'',
  last_step_start INTEGER,
  title           TEXT,
  held            TEXT,
  last_time       INTEGER
);
CREATE INDEX IF NOT EXISTS sessions_parent ON sessions(parent);
CREATE INDEX IF NOT EXISTS sessions_cwd ON sessions(cwd, created_at);

-- Every event of every session, in compressed blocks of consecutive seqs
-- (indexer/store/blocks.py: format, sealing rule). `dict_id` names the zstd dictionary.
CREATE TABLE IF NOT EXISTS blocks (
  id          INTEGER PRIMARY KEY,
  session_key INTEGER NOT NULL,
  first_seq   INTEGER NOT NULL,
  last_seq    INTEGER NOT NULL,
  dict_id     INTEGER NOT NULL,
  data        BLOB NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS blocks_seq ON blocks(session_key, first_seq, last_seq);

-- The zstd dictionaries the blocks were compressed with, by dictionary id.
CREATE TABLE IF NOT EXISTS dictionaries (
  id   INTEGER PRIMARY KEY,
  data BLOB NOT NULL
);

-- Events a later replace shadowed: `seq` is replaced by `replaced_by`.
CREATE TABLE IF NOT EXISTS replaced (
  session_key INTEGER NOT NULL,
  seq         INTEGER NOT NULL,
  replaced_by INTEGER NOT NULL,
  PRIMARY KEY (session_key, seq)
) WITHOUT ROWID;

-- source links as runs: `seq` cites every seq in [first, last] (derived-event lookups).
CREATE TABLE IF NOT EXISTS source_runs (
  session_key INTEGER NOT NULL,
  first       INTEGER NOT NULL,
  last        INTEGER NOT NULL,
  seq         INTEGER NOT NULL,
  PRIMARY KEY (session_key, first, seq)
) WITHOUT ROWID;

-- surface replacements: `seq` replaced the nodes in `shadowed` (JSON list, surface order).
CREATE TABLE IF NOT EXISTS replacements (
  session_key INTEGER NOT NULL,
  seq         INTEGER NOT NULL,
  start_seq   INTEGER NOT NULL,
  end_seq     INTEGER NOT NULL,
  shadowed    TEXT NOT NULL,
  PRIMARY KEY (session_key, seq)
) WITHOUT ROWID;

-- Secrets the writer redacted, per session and kind (indexer/redact/counts.py). Added
-- without a schema version: the writer creates it in a dir that lacks it.
CREATE TABLE IF NOT EXISTS redactions (
  session_key INTEGER NOT NULL,
  kind        TEXT NOT NULL,
  count       INTEGER NOT NULL,
  PRIMARY KEY (session_key, kind)
) WITHOUT ROWID;

-- consumed offsets, committed in the same transaction as the rows they produced.
CREATE TABLE IF NOT EXISTS offsets (
  topic       TEXT NOT NULL,
  partition   INTEGER NOT NULL,
  next_offset INTEGER NOT NULL,
  PRIMARY KEY (topic, partition)
) WITHOUT ROWID;

-- The log file the local source (`serve`, `mcp --sessions`) applied each session from,
-- and its (size, mtime_ns) when it was read (NULL: not known, read it again). At start
-- the watched sessions whose file is gone are deleted (sessions from `sessionq ingest`
-- of other paths have no row here and are never reconciled away), and a log whose
-- signature is unchanged is not read again.
-- Sessions an older release imported from another agent's log (schema 2 and before):
-- their events are in that release's mapping, so a log read again replaces them instead
-- of conflicting with them (indexer.store.records.store, indexer.sources.local.applier).
CREATE TABLE IF NOT EXISTS stale_imports (
  session_key INTEGER PRIMARY KEY
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS watched_sources (
  session_id TEXT PRIMARY KEY,
  path       TEXT NOT NULL,
  size       INTEGER,
  mtime_ns   INTEGER
) WITHOUT ROWID;
