-- sessionq store schema (SQLite, WAL). Version in meta.schema_version.
CREATE TABLE IF NOT EXISTS meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
);

-- One row per stored session. `surface` is the current surface (fold order) as a JSON
-- list so a later batch continues the fold without replaying the log.
CREATE TABLE IF NOT EXISTS sessions (
  id              TEXT PRIMARY KEY,
  header          TEXT NOT NULL,
  cwd             TEXT,
  parent          TEXT,
  created_at      INTEGER NOT NULL,
  live            INTEGER NOT NULL DEFAULT 0,
  next_seq        INTEGER NOT NULL DEFAULT 0,
  surface         TEXT NOT NULL DEFAULT '[]',
  last_step_start INTEGER,
  title           TEXT,
  held            TEXT
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS sessions_parent ON sessions(parent);
CREATE INDEX IF NOT EXISTS sessions_cwd ON sessions(cwd, created_at);

-- Every event of every session, raw JSON in its original key order.
CREATE TABLE IF NOT EXISTS events (
  session_id  TEXT NOT NULL,
  seq         INTEGER NOT NULL,
  type        TEXT NOT NULL,
  time        INTEGER NOT NULL,
  surface     TEXT NOT NULL,
  replaced_by INTEGER,
  indexed     INTEGER NOT NULL DEFAULT 0,
  raw         BLOB NOT NULL,
  PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;

-- source links: `seq` cites `source_seq` (for derived-event lookups).
CREATE TABLE IF NOT EXISTS sources (
  session_id TEXT NOT NULL,
  source_seq INTEGER NOT NULL,
  seq        INTEGER NOT NULL,
  PRIMARY KEY (session_id, source_seq, seq)
) WITHOUT ROWID;

-- surface replacements: `seq` replaced the nodes in `shadowed` (JSON list, surface order).
CREATE TABLE IF NOT EXISTS replacements (
  session_id TEXT NOT NULL,
  seq        INTEGER NOT NULL,
  start_seq  INTEGER NOT NULL,
  end_seq    INTEGER NOT NULL,
  shadowed   TEXT NOT NULL,
  PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;

-- consumed offsets, committed in the same transaction as the rows they produced.
CREATE TABLE IF NOT EXISTS offsets (
  topic       TEXT NOT NULL,
  partition   INTEGER NOT NULL,
  next_offset INTEGER NOT NULL,
  PRIMARY KEY (topic, partition)
) WITHOUT ROWID;

-- The log file `sessionq serve`'s watcher applied each session from: at start, serve
-- deletes the watched sessions whose file is gone (sessions from `sessionq ingest` of
-- other paths have no row here and are never reconciled away).
CREATE TABLE IF NOT EXISTS watched_sources (
  session_id TEXT PRIMARY KEY,
  path       TEXT NOT NULL
) WITHOUT ROWID;
