"""Files, chunks and their FTS rows, transcript cursors, skipped files."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from indexer.api.responses import SkippedFile
from indexer.store.records import (
    STORED_CHUNK_COLS,
    ChunkChanges,
    ChunkRow,
    FileState,
    NewChunk,
    NewFile,
    SearchRow,
    SessionCursor,
    kept_apart,
)
from indexer.store.sqlite.connection import StoreBase

_UPSERT_FILE = (
    "INSERT INTO files(path, source, hash, mtime_ns, size, lines, indexed_at) "
    "VALUES(?, ?, ?, ?, ?, ?, ?) ON CONFLICT(path) DO UPDATE SET "
    "hash=excluded.hash, mtime_ns=excluded.mtime_ns, size=excluded.size, "
    "lines=excluded.lines, indexed_at=excluded.indexed_at"
)


def _state(state: FileState) -> tuple[str, int, int]:
    return state.hash, state.mtime_ns, state.size


class ChunkTables(StoreBase):
    """The files and chunks tables (and chunks_fts, session_cursors, skipped)."""

    def file_states(self, source: str | None = None) -> dict[str, FileState]:
        sql = "SELECT path, hash, mtime_ns, size FROM files"
        args: tuple[Any, ...] = ()
        if source is not None:
            sql += " WHERE source=?"
            args = (source,)
        return {
            str(p): FileState(str(h), int(m), int(s)) for p, h, m, s in self.db.execute(sql, args)
        }

    def file_lines(self, path: str) -> int | None:
        row = self.db.execute("SELECT lines FROM files WHERE path=?", (path,)).fetchone()
        return None if row is None else int(row[0])

    def touch_file(self, path: str, mtime_ns: int, size: int) -> None:
        self.db.execute("UPDATE files SET mtime_ns=?, size=? WHERE path=?", (mtime_ns, size, path))

    def delete_file(self, path: str) -> int:
        """Remove a file and its chunks; returns the number of chunks removed."""
        ids = [r[0] for r in self.db.execute("SELECT id FROM chunks WHERE path=?", (path,))]
        self._delete_chunks(ids)
        self.db.execute("DELETE FROM files WHERE path=?", (path,))
        return len(ids)

    def drop_chunks_after(self, path: str, line: int) -> int:
        ids = [
            int(r[0])
            for r in self.db.execute(
                "SELECT id FROM chunks WHERE path=? AND start_line>?", (path, line)
            )
        ]
        self._delete_chunks(ids)
        return len(ids)

    def _delete_chunks(self, ids: Sequence[int]) -> None:
        if not ids:
            return
        self._bump_chunks()
        self.db.executemany("DELETE FROM chunks_fts WHERE rowid=?", ((i,) for i in ids))
        if self.has_vectors():
            self._bump_vectors()
            self.db.executemany("DELETE FROM chunks_vec WHERE rowid=?", ((i,) for i in ids))
        self.db.executemany("DELETE FROM chunks WHERE id=?", ((i,) for i in ids))

    def _insert_chunks(self, path: str, source: str, chunks: Iterable[ChunkRow]) -> int:
        return self._insert_rows([(path, source, c) for c in chunks])

    def _insert_rows(self, rows: Sequence[tuple[str, str, ChunkRow]]) -> int:
        """Insert chunks (each with its path and source) under new ids. Ids only grow,
        never reused (the ``chunkIdHigh`` meta remembers the highest ever given, as
        deleting the newest rows would let SQLite hand their ids out again): a reader
        holding an older snapshot knows every chunk above its highest id is new, and
        that an id it knows still names the same text if it still exists
        (keywords.py)."""
        if not rows:
            return 0
        self._bump_chunks()
        (top,) = self.db.execute("SELECT coalesce(max(id), 0) FROM chunks").fetchone() or (0,)
        first = max(int(self.meta_get("chunkIdHigh") or 0), int(top)) + 1
        self.db.executemany(
            "INSERT INTO chunks(id, path, source, start_line, end_line, heading, hash, text, "
            "lines, at, origin) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    i,
                    path,
                    source,
                    c.start_line,
                    c.end_line,
                    c.heading,
                    c.hash,
                    c.text,
                    c.lines,
                    c.at,
                    c.origin,
                )
                for i, (path, source, c) in enumerate(rows, first)
            ],  # fmt: skip
        )
        self.db.executemany(
            "INSERT INTO chunks_fts(rowid, body, heading, path, source) VALUES(?, ?, ?, ?, ?)",
            [
                (i, c.fts_body, c.heading, path, source)
                for i, (path, source, c) in enumerate(rows, first)
            ],
        )
        self.meta_set("chunkIdHigh", str(first + len(rows) - 1))
        return len(rows)

    def append_chunks(
        self, path: str, source: str, state: FileState, lines: int, chunks: Iterable[ChunkRow]
    ) -> int:
        """Add chunks to ``path`` (a growing transcript) and record its new state."""
        self.db.execute(_UPSERT_FILE, (path, source, *_state(state), lines, time.time()))
        return self._insert_chunks(path, source, chunks)

    def append_files(self, files: Sequence[NewFile]) -> int:
        """``append_chunks`` of each of ``files``: their rows in one statement, then
        their chunks under one id lookup and one version bump."""
        now = time.time()
        self.db.executemany(
            _UPSERT_FILE, [(f.path, f.source, *_state(f.state), f.lines, now) for f in files]
        )
        return self._insert_rows([(f.path, f.source, c) for f in files for c in f.chunks])

    def rename_path(self, old: str, new: str, prepare: Callable[[str], str]) -> None:
        """Move every row of ``old`` to ``new`` (a rotated transcript keeps its rows).
        ``prepare`` maps chunk text to its FTS body."""
        rows = self.db.execute(
            "SELECT id, heading, text, source FROM chunks WHERE path=?", (old,)
        ).fetchall()
        self.db.execute("UPDATE chunks SET path=? WHERE path=?", (new, old))
        self._bump_chunks()
        for cid, heading, text, source in rows:
            self.db.execute("DELETE FROM chunks_fts WHERE rowid=?", (cid,))
            self.db.execute(
                "INSERT INTO chunks_fts(rowid, body, heading, path, source) VALUES(?, ?, ?, ?, ?)",
                (cid, prepare(str(text)), heading, new, source),
            )
        self.db.execute("UPDATE files SET path=? WHERE path=?", (new, old))
        self.db.execute("UPDATE session_cursors SET path=? WHERE path=?", (new, old))

    def session_cursors(self) -> dict[str, SessionCursor]:
        return {
            str(p): SessionCursor(str(p), int(d), int(i), int(c), int(n), str(h), int(hl), int(m))
            for p, d, i, c, n, h, hl, m in self.db.execute(
                "SELECT path, dev, ino, committed, lines, head, head_len, malformed "
                "FROM session_cursors"
            )
        }

    def put_session_cursor(self, c: SessionCursor) -> None:
        self.db.execute(
            "INSERT INTO session_cursors(path, dev, ino, committed, lines, updated_at, head, "
            "head_len, malformed) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(path) DO UPDATE "
            "SET dev=excluded.dev, ino=excluded.ino, committed=excluded.committed, "
            "lines=excluded.lines, updated_at=excluded.updated_at, head=excluded.head, "
            "head_len=excluded.head_len, malformed=excluded.malformed",
            (
                c.path,
                c.dev,
                c.ino,
                c.committed,
                c.lines,
                time.time(),
                c.head,
                c.head_len,
                c.malformed,
            ),
        )

    def delete_session(self, path: str) -> int:
        """Forget a transcript: its chunks, file row and cursor."""
        self.db.execute("DELETE FROM session_cursors WHERE path=?", (path,))
        return self.delete_file(path)

    def replace_file(
        self,
        path: str,
        source: str,
        state: FileState,
        lines: int,
        chunks: Iterable[ChunkRow],
    ) -> tuple[int, int]:
        """``path``'s rows become ``chunks``, the unchanged ones kept (base.py); call
        inside ``transaction()``. Returns (chunks removed, chunks written)."""
        stored = self.db.execute(f"SELECT {STORED_CHUNK_COLS} FROM chunks WHERE path=?", (path,))
        new, gone = kept_apart(stored, chunks)
        self._delete_chunks(gone)
        return len(gone), self.append_chunks(path, source, state, lines, new)

    def clear(self) -> None:
        """Remove every file, chunk and vector (keeps the embedding cache)."""
        self._bump_chunks()
        self.db.execute("DELETE FROM chunks_fts")
        if self.has_vectors():
            self.db.execute("DROP TABLE chunks_vec")
            self._bump_vectors()
        self.db.execute("DELETE FROM chunks")
        self.db.execute("DELETE FROM files")
        self.db.execute("DELETE FROM skipped")
        self.db.execute("DELETE FROM session_cursors")

    def record_skip(self, path: str, source: str, reason: str) -> None:
        self.db.execute(
            "INSERT INTO skipped(path, source, reason, at) VALUES(?, ?, ?, ?) "
            "ON CONFLICT(path) DO UPDATE SET reason=excluded.reason, at=excluded.at",
            (path, source, reason, time.time()),
        )

    def clear_skip(self, path: str) -> None:
        self.db.execute("DELETE FROM skipped WHERE path=?", (path,))

    def prune_skips(self, keep: set[str], source: str) -> None:
        for (p,) in list(self.db.execute("SELECT path FROM skipped WHERE source=?", (source,))):
            if p not in keep:
                self.clear_skip(str(p))

    def sync_skips(self, source: str, items: Sequence[tuple[str, str]]) -> None:
        """Make ``source``'s skipped list exactly ``items`` (path, reason), in a
        transaction of its own, and only when it changes."""
        rows = self.db.execute("SELECT path, reason FROM skipped WHERE source=?", (source,))
        old = {str(p): str(r) for p, r in rows}
        if old == dict(items):
            return
        with self.transaction():
            self.db.execute("DELETE FROM skipped WHERE source=?", (source,))
            for path, reason in items:
                self.record_skip(path, source, reason)

    def skipped(self) -> list[SkippedFile]:
        return [
            SkippedFile(path=p, source=s, reason=r, at=a)
            for p, s, r, a in self.db.execute(
                "SELECT path, source, reason, at FROM skipped ORDER BY path"
            )
        ]

    def has_source(self, source: str) -> bool:
        row = self.db.execute(
            "SELECT EXISTS(SELECT 1 FROM files WHERE source=?)", (source,)
        ).fetchone()
        return bool(row and row[0])

    def chunk_rows(self, ids: Sequence[int]) -> dict[int, SearchRow]:
        """Rows by id (one query; rank 0.0); ids of chunks that do not exist are left out."""
        sql = (
            "SELECT id, path, source, start_line, end_line, heading, text, lines, at, origin "
            "FROM chunks WHERE id IN ({marks})"
        )
        return {
            int(i): SearchRow(int(i), str(p), str(s), int(a), int(b), str(h), str(t), 0.0, m, w, o)
            for i, p, s, a, b, h, t, m, w, o in self._rows_in(sql, list(ids))
        }

    def window_ids(
        self, paths: Sequence[str], start: float, end: float, limit: int
    ) -> list[tuple[int, float | None]]:
        out: list[tuple[int, float | None]] = [
            (int(i), None)
            for (i,) in self._rows_in(
                "SELECT id FROM chunks WHERE path IN ({marks}) ORDER BY path, start_line", paths
            )
        ]
        timed = self.db.execute(
            "SELECT id, at FROM chunks WHERE at >= ? AND at < ? ORDER BY at DESC, id LIMIT ?",
            (start, end, limit),
        )
        out += [(int(i), float(a)) for i, a in timed]
        return out

    # -- the change feed (migration 0006) ----------------------------------------------

    def change_seq(self) -> int:
        """The change feed's position: the last entry ever written (0: none)."""
        row = self.db.execute(
            "SELECT seq FROM sqlite_sequence WHERE name='chunk_changes'"
        ).fetchone()
        return int(row[0]) if row else 0

    def changes_since(self, after: int) -> ChunkChanges | None:
        """Every change after position ``after``; None when some of them were pruned
        (the reader reloads in full)."""
        if after < int(self.meta_get("changesPrunedTo") or 0):
            return None
        rows = self.db.execute(
            "SELECT seq, chunk, kind FROM chunk_changes WHERE seq > ? ORDER BY seq", (after,)
        )
        return ChunkChanges.fold(rows, after, self.change_seq)

    def prune_changes(self, keep: int) -> int:
        """Drop all but the last ``keep`` entries of the change feed; returns how many."""
        high = self.change_seq() - keep
        if high <= int(self.meta_get("changesPrunedTo") or 0):
            return 0
        with self.transaction():
            n = self.db.execute("SELECT count(*) FROM chunk_changes WHERE seq <= ?", (high,))
            (dropped,) = n.fetchone() or (0,)
            self.db.execute("DELETE FROM chunk_changes WHERE seq <= ?", (high,))
            self.meta_set("changesPrunedTo", str(high))
        return int(dropped)

    def new_chunks(self, after_id: int, also: Sequence[int] = ()) -> list[NewChunk]:
        """Chunks with an id above ``after_id``, and the chunks ``also`` that still
        exist, by id."""
        sql = "SELECT id, source, path, heading, text FROM chunks WHERE "
        got = list(self.db.execute(sql + "id > ?", (after_id,)))
        got += self._rows_in(sql + "id <= ? AND id IN ({marks})", also, (after_id,))
        rows = (NewChunk(int(i), str(s), str(p), str(h), str(t)) for i, s, p, h, t in got)
        return sorted(rows, key=lambda c: c.id)

    def texts_for_hashes(self, hashes: Sequence[str]) -> dict[str, str]:
        rows = self._rows_in("SELECT hash, text FROM chunks WHERE hash IN ({marks})", hashes)
        return {str(h): str(t) for h, t in rows}
