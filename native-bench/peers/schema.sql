-- The SQLite schema both peers use (native-bench/peers/README.md). Written the way a team would
-- write it for these queries: the event as JSON in one row, the filtered columns indexed, and
-- custom_metadata in its own table keyed for `key = ? AND value = ?` lookups.
PRAGMA journal_mode = WAL;
-- FULL: every commit is fsynced before it returns, so a 201 means the record is on disk.
PRAGMA synchronous = FULL;

CREATE TABLE IF NOT EXISTS events (
  id TEXT PRIMARY KEY,
  created_at INTEGER NOT NULL,          -- ms since the epoch, when the server received it
  device_id TEXT,
  event_schema TEXT NOT NULL,
  workflow_id TEXT,
  body TEXT NOT NULL                    -- the event as served: JSON, images by id, no base64
);
CREATE INDEX IF NOT EXISTS events_by_device ON events (device_id, created_at);
CREATE INDEX IF NOT EXISTS events_by_created ON events (created_at);

-- One row per custom_metadata key; values as text (String(value) in JS, str() with JSON
-- spelling of booleans in Python), so `metadata_filter=batch:42` is `value = '42'`.
CREATE TABLE IF NOT EXISTS event_metadata (
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  event_id TEXT NOT NULL,
  PRIMARY KEY (key, value, event_id)
) WITHOUT ROWID;
