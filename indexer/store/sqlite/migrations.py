"""Schema migrations: named, applied in order, only ever appended.

Never edit or reorder an entry once it has been released; add a new one.
"""

from __future__ import annotations

__all__ = ["MIGRATIONS"]

MIGRATIONS: list[tuple[str, str]] = [
    (
        "0001_initial",
        """
        CREATE TABLE meta(
            key TEXT PRIMARY KEY,
            value TEXT NOT NULL
        );
        CREATE TABLE files(
            path TEXT PRIMARY KEY,
            source TEXT NOT NULL,
            hash TEXT NOT NULL,
            mtime_ns INTEGER NOT NULL,
            size INTEGER NOT NULL,
            lines INTEGER NOT NULL,
            indexed_at REAL NOT NULL
        );
        CREATE TABLE chunks(
            id INTEGER PRIMARY KEY,
            path TEXT NOT NULL,
            source TEXT NOT NULL,
            start_line INTEGER NOT NULL,
            end_line INTEGER NOT NULL,
            heading TEXT NOT NULL,
            hash TEXT NOT NULL,
            text TEXT NOT NULL
        );
        CREATE INDEX chunks_by_path ON chunks(path);
        CREATE INDEX chunks_by_hash ON chunks(hash);
        -- Contentless: chunk text lives once, in chunks; the FTS body is the text
        -- prepared for tokenizing (CJK spaced), rowid = chunks.id.
        CREATE VIRTUAL TABLE chunks_fts USING fts5(
            body, heading, path,
            content='', contentless_delete=1,
            tokenize='porter unicode61 remove_diacritics 2'
        );
        CREATE TABLE embedding_cache(
            provider TEXT NOT NULL,
            hash TEXT NOT NULL,
            dims INTEGER NOT NULL,
            vector BLOB NOT NULL,
            last_used REAL NOT NULL,
            PRIMARY KEY(provider, hash)
        ) WITHOUT ROWID;
        CREATE INDEX embedding_cache_lru ON embedding_cache(last_used);
        CREATE TABLE session_cursors(
            path TEXT PRIMARY KEY,
            dev INTEGER NOT NULL,
            ino INTEGER NOT NULL,
            committed INTEGER NOT NULL,
            lines INTEGER NOT NULL,
            updated_at REAL NOT NULL
        );
        CREATE TABLE skipped(
            path TEXT PRIMARY KEY,
            source TEXT NOT NULL,
            reason TEXT NOT NULL,
            at REAL NOT NULL
        );
        """,
    ),
    (
        "0002_session_cursor_identity",
        """
        ALTER TABLE session_cursors ADD COLUMN head TEXT NOT NULL DEFAULT '';
        ALTER TABLE session_cursors ADD COLUMN head_len INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE session_cursors ADD COLUMN malformed INTEGER NOT NULL DEFAULT 0;
        CREATE INDEX session_cursors_by_inode ON session_cursors(dev, ino);
        """,
    ),
    (
        "0003_fts_source_column",
        """
        -- The source becomes an FTS column so a source filter applies before ranking's
        -- LIMIT; rows are re-inserted by the rebuild that FTS_VERSION 2 triggers.
        DROP TABLE chunks_fts;
        CREATE VIRTUAL TABLE chunks_fts USING fts5(
            body, heading, path, source,
            content='', contentless_delete=1,
            tokenize='porter unicode61 remove_diacritics 2'
        );
        """,
    ),
    (
        "0004_chunk_embedded_flag",
        """
        ALTER TABLE chunks ADD COLUMN embedded INTEGER NOT NULL DEFAULT 0;
        CREATE INDEX chunks_pending ON chunks(embedded) WHERE embedded = 0;
        """,
    ),
    (
        "0005_batch_jobs",
        """
        -- Provider batch jobs in flight: a restarted process collects them instead of
        -- paying again. hashes: JSON list of the chunk hashes (custom ids) it covers.
        CREATE TABLE batch_jobs(
            id TEXT PRIMARY KEY,
            provider TEXT NOT NULL,
            hashes TEXT NOT NULL,
            created_at REAL NOT NULL,
            polled_at REAL
        );
        """,
    ),
    (
        "0006_chunk_changes",
        """
        -- What in-memory snapshots (live.py) catch up from: chunks deleted (kind 0),
        -- embedded or re-embedded (1) and moved to another path (2), in commit order.
        -- New chunks need no entry: chunk ids only grow (chunkIdHigh). The writer
        -- prunes old entries (meta changesPrunedTo); a snapshot older than that
        -- reloads in full.
        CREATE TABLE chunk_changes(
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            chunk INTEGER NOT NULL,
            kind INTEGER NOT NULL
        );
        CREATE TRIGGER chunks_deleted AFTER DELETE ON chunks BEGIN
            INSERT INTO chunk_changes(chunk, kind) VALUES(old.id, 0);
        END;
        CREATE TRIGGER chunks_embedded AFTER UPDATE OF embedded ON chunks
        WHEN new.embedded = 1 BEGIN
            INSERT INTO chunk_changes(chunk, kind) VALUES(new.id, 1);
        END;
        CREATE TRIGGER chunks_moved AFTER UPDATE OF path ON chunks BEGIN
            INSERT INTO chunk_changes(chunk, kind) VALUES(new.id, 2);
        END;
        """,
    ),
    (
        "0007_chunk_lines",
        """
        -- Transcript chunks: each text line's file line (records.ChunkRow.lines), so a
        -- snippet's line range is the transcript's, across skipped lines.
        ALTER TABLE chunks ADD COLUMN lines TEXT;
        """,
    ),
    (
        "0008_chunk_at",
        """
        -- Transcript chunks: their newest message's time (records.ChunkRow.at, epoch
        -- seconds), so "what did I say yesterday" finds them (search/query/when.py).
        ALTER TABLE chunks ADD COLUMN at REAL;
        CREATE INDEX chunks_by_at ON chunks(at) WHERE at IS NOT NULL;
        """,
    ),
    (
        "0009_chunk_origin",
        """
        -- Transcript chunks: OpenClaw's provenance, "<originClass>:<sessionKind>"
        -- (records.ChunkRow.origin); NULL for Markdown and older transcript chunks.
        ALTER TABLE chunks ADD COLUMN origin TEXT;
        """,
    ),
]
