"""The index file: one SQLite database per agent. The only module that writes SQL.

Opened through apsw (a binding that bundles a current SQLite with FTS5 and can load
extensions on Linux and macOS), in WAL mode. sqlite-vec is loaded when it can be;
when it cannot, keyword search keeps working and ``vector_error`` says why.

Writes happen inside ``transaction()`` (BEGIN IMMEDIATE ... COMMIT): a file's rows
are replaced in one transaction, so a crash leaves its old or its new version.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw

from . import bm25
from .errors import StoreError
from .migrations import MIGRATIONS

__all__ = [
    "STORE_ERRORS",
    "FTS_TOKENIZER",
    "FTS_WEIGHTS",
    "ChunkRow",
    "FileState",
    "SearchRow",
    "SessionCursor",
    "Store",
]

MMAP_BYTES = 1 << 30  # PRAGMA mmap_size of every connection
# The FTS5 tokenizer of chunks_fts (migrations) and BM25 weights of its body,
# heading and path columns (source: 0); keywords.py replicates both.
FTS_TOKENIZER = "porter unicode61 remove_diacritics 2"
FTS_WEIGHTS = (1.0, 1.0, 0.5)


@dataclass(frozen=True, slots=True)
class FileState:
    hash: str
    mtime_ns: int
    size: int


@dataclass(frozen=True, slots=True)
class ChunkRow:
    """A chunk as the pipeline hands it to the store."""

    start_line: int
    end_line: int
    heading: str
    hash: str
    text: str
    fts_body: str


@dataclass(frozen=True, slots=True)
class SessionCursor:
    """How far a transcript is indexed: the file is known by (dev, ino) and by a hash
    of its first ``head_len`` bytes; ``committed`` bytes / ``lines`` lines are in."""

    path: str
    dev: int
    ino: int
    committed: int
    lines: int
    head: str
    head_len: int
    malformed: int


@dataclass(slots=True)  # not frozen: load_rows fills pending rows in place
class SearchRow:
    id: int
    path: str
    source: str
    start_line: int
    end_line: int
    heading: str
    text: str
    rank: float  # BM25 (bm25.py): negative, lower is better
    # False: a candidate from in-memory state (id, source and rank only) whose row
    # has not been read yet (Store.load_rows); still False after loading if the
    # chunk was deleted in between.
    loaded: bool = True

    @classmethod
    def pending(cls, cid: int, source: str, rank: float = 0.0) -> SearchRow:
        return cls(cid, "", source, 0, 0, "", "", rank, False)


# What means the index itself is in trouble (as opposed to one file being odd).
STORE_ERRORS: tuple[type[BaseException], ...] = (apsw.Error, StoreError)


def private_file(path: Path) -> None:
    """Create ``path`` mode 0600 if missing, and make an existing one 0600: index
    files hold the agent's memory and transcripts (SQLite gives its -wal and -shm
    files the database file's mode)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        if os.fstat(fd).st_mode & 0o077:
            os.fchmod(fd, 0o600)
    finally:
        os.close(fd)
    real = os.path.realpath(path)
    for suffix in ("-wal", "-shm"):  # made by an older memindex with the umask's mode
        with contextlib.suppress(OSError):
            if os.stat(real + suffix).st_mode & 0o077:
                os.chmod(real + suffix, 0o600)


def private_dir(path: Path) -> None:
    """``path`` and missing parents, the last one mode 0700 (left as is if it exists)."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)


def _vec_path() -> str:
    """sqlite-vec's loadable extension, found without importing the package (its
    ``__init__`` imports numpy and sqlite3: 0.16 s, against 0.4 ms for loading the
    extension itself)."""
    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("the sqlite-vec package is not installed")
    return os.path.join(next(iter(spec.submodule_search_locations)), "vec0")


class Store:
    """An open index file."""

    def __init__(self, path: Path, *, readonly: bool = False) -> None:
        self.path = path
        self.file = Path(os.path.realpath(path))  # the generation file behind the path
        self.readonly = readonly
        self.vector_error: str | None = None
        self.vec_version: str | None = None
        if readonly and not path.exists():
            raise StoreError(f"no index at {path}: run 'memindex index' first")
        try:
            if readonly:
                flags = apsw.SQLITE_OPEN_READONLY
            else:
                private_dir(path.parent)
                private_file(path)
                flags = apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE
            self.db = apsw.Connection(str(path), flags=flags)
            self.db.set_busy_timeout(10_000)
            bm25.register(self.db)
            # Reads through a memory map, not read() into SQLite's 2 MB page cache:
            # fetching the rows of a search's candidates at 100k chunks took half the
            # time (bench/hybrid_bench.py). The pages are the OS's file cache, shared
            # by every connection; nothing here truncates an index file in place.
            self.db.execute(f"PRAGMA mmap_size={MMAP_BYTES}")
            if not readonly:
                self.db.execute("PRAGMA journal_mode=WAL")
                self.db.execute("PRAGMA synchronous=NORMAL")
            self._load_vec()
            if not readonly:
                self._migrate()
            elif not self._has_table("schema_migrations"):
                raise StoreError(f"{path} is not a memindex index (run 'memindex index' first)")
        except apsw.Error as exc:
            raise StoreError(f"cannot open index {path}: {exc}") from exc
        except OSError as exc:
            raise StoreError(f"cannot create index directory {path.parent}: {exc}") from exc

    # -- lifecycle -----------------------------------------------------------

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _load_vec(self) -> None:
        try:
            self.db.enable_load_extension(True)
            self.db.load_extension(_vec_path())
            self.db.enable_load_extension(False)
            row = self.db.execute("SELECT vec_version()").fetchone()
            self.vec_version = str(row[0]) if row else None
        except (apsw.Error, ImportError, OSError, AttributeError) as exc:
            self.vector_error = f"sqlite-vec could not be loaded: {exc}"

    def _has_table(self, name: str) -> bool:
        row = self.db.execute(
            "SELECT 1 FROM sqlite_master WHERE type IN ('table','view') AND name=?", (name,)
        ).fetchone()
        return row is not None

    def _migrate(self) -> None:
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations(name TEXT PRIMARY KEY, applied_at REAL)"
        )
        done = {r[0] for r in self.db.execute("SELECT name FROM schema_migrations")}
        known = {name for name, _ in MIGRATIONS}
        unknown = done - known
        if unknown:
            raise StoreError(
                f"{self.path} was written by a newer memindex (migrations {sorted(unknown)}); "
                "upgrade memindex or delete the index file to rebuild it"
            )
        for name, sql in MIGRATIONS:
            if name in done:
                continue
            with self.transaction():
                self.db.execute(sql)
                self.db.execute(
                    "INSERT INTO schema_migrations(name, applied_at) VALUES(?, ?)",
                    (name, time.time()),
                )

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """BEGIN IMMEDIATE ... COMMIT, rolled back on any exception. A full disk
        (SQLite has then rolled back already) becomes a StoreError saying so."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield
            self.db.execute("COMMIT")
        except BaseException as exc:
            self._abort()
            if isinstance(exc, (apsw.FullError, apsw.IOError)):
                raise StoreError(
                    f"cannot write the index {self.file}: {exc} (is the disk full, or the "
                    "file over a size limit?); nothing was lost, the last complete state "
                    "is kept and the next sync retries"
                ) from exc
            raise

    @contextmanager
    def read_snapshot(self) -> Iterator[None]:
        """A read transaction: every query inside sees one committed state."""
        self.db.execute("BEGIN")
        try:
            yield
        finally:
            self._abort()

    def _abort(self) -> None:
        if not self.db.getautocommit():  # SQLite may have rolled back on its own
            self.db.execute("ROLLBACK")

    @contextmanager
    def savepoint(self) -> Iterator[None]:
        """A nested atomic unit inside a transaction."""
        self.db.execute("SAVEPOINT unit")
        try:
            yield
        except BaseException:
            if not self.db.getautocommit():  # else the whole transaction is gone
                self.db.execute("ROLLBACK TO unit")
                self.db.execute("RELEASE unit")
            raise
        self.db.execute("RELEASE unit")

    @contextmanager
    def batch(self) -> Iterator[Callable[[], None]]:
        """A long write split into several transactions.

        Yields ``checkpoint()``, which commits what was written so far and begins a
        new transaction; the last one commits on exit, or rolls back on error."""

        def checkpoint() -> None:
            self.db.execute("COMMIT")
            self.db.execute("BEGIN IMMEDIATE")

        with self.transaction():
            yield checkpoint

    # -- meta ------------------------------------------------------------------

    def meta_get(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def change_versions(self) -> tuple[str | None, str | None, str | None]:
        """(chunksVersion, vectorsVersion, vectorKey) in one read: what a search
        checks its in-memory state against."""
        got = dict(
            self.db.execute(
                "SELECT key, value FROM meta "
                "WHERE key IN ('chunksVersion', 'vectorsVersion', 'vectorKey')"
            )
        )
        return got.get("chunksVersion"), got.get("vectorsVersion"), got.get("vectorKey")

    def meta_set(self, key: str, value: str) -> None:
        self.db.execute(
            "INSERT INTO meta(key, value) VALUES(?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value=excluded.value",
            (key, value),
        )

    # -- files and chunks --------------------------------------------------------

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

    def _bump_chunks(self) -> None:
        """Tell readers holding keyword postings in memory that chunks changed."""
        self.meta_set("chunksVersion", f"{time.time_ns()}")

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
        """Insert chunks under new ids. Ids only grow, never reused (the ``chunkIdHigh``
        meta remembers the highest ever given, as deleting the newest rows would let
        SQLite hand their ids out again): a reader holding an older snapshot knows
        every chunk above its highest id is new, and that an id it knows still names
        the same text if it still exists (keywords.py)."""
        self._bump_chunks()
        (top,) = self.db.execute("SELECT coalesce(max(id), 0) FROM chunks").fetchone() or (0,)
        rowid = max(int(self.meta_get("chunkIdHigh") or 0), int(top))
        insert = (
            "INSERT INTO chunks(id, path, source, start_line, end_line, heading, hash, text) "
            "VALUES(?, ?, ?, ?, ?, ?, ?, ?)"
        )
        n = 0
        for c in chunks:
            rowid += 1
            self.db.execute(
                insert, (rowid, path, source, c.start_line, c.end_line, c.heading, c.hash, c.text)
            )
            self.db.execute(
                "INSERT INTO chunks_fts(rowid, body, heading, path, source) VALUES(?, ?, ?, ?, ?)",
                (rowid, c.fts_body, c.heading, path, source),
            )
            n += 1
        if n:
            self.meta_set("chunkIdHigh", str(rowid))
        return n

    def append_chunks(
        self, path: str, source: str, state: FileState, lines: int, chunks: Iterable[ChunkRow]
    ) -> int:
        """Add chunks to ``path`` (a growing transcript) and record its new state."""
        self.db.execute(
            "INSERT INTO files(path, source, hash, mtime_ns, size, lines, indexed_at) "
            "VALUES(?, ?, ?, ?, ?, ?, ?) ON CONFLICT(path) DO UPDATE SET "
            "hash=excluded.hash, mtime_ns=excluded.mtime_ns, size=excluded.size, "
            "lines=excluded.lines, indexed_at=excluded.indexed_at",
            (path, source, state.hash, state.mtime_ns, state.size, lines, time.time()),
        )
        return self._insert_chunks(path, source, chunks)

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
        """Replace every row of ``path``; call inside ``transaction()``.

        Returns (chunks removed, chunks written)."""
        removed = self.delete_file(path)
        self.db.execute(
            "INSERT INTO files(path, source, hash, mtime_ns, size, lines, indexed_at) "
            "VALUES(?, ?, ?, ?, ?, ?, ?)",
            (path, source, state.hash, state.mtime_ns, state.size, lines, time.time()),
        )
        return removed, self._insert_chunks(path, source, chunks)

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

    # -- skipped files -------------------------------------------------------------

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

    def skipped(self) -> list[dict[str, Any]]:
        return [
            {"path": p, "source": s, "reason": r, "at": a}
            for p, s, r, a in self.db.execute(
                "SELECT path, source, reason, at FROM skipped ORDER BY path"
            )
        ]

    # -- vectors ---------------------------------------------------------------------

    def has_vectors(self) -> bool:
        return self.vec_version is not None and self._has_table("chunks_vec")

    def ensure_vector_table(self, dims: int) -> None:
        """Create the vec0 table of chunk vectors (rowid = chunk id) for ``dims``."""
        if self.vec_version is None:
            raise StoreError(self.vector_error or "sqlite-vec is not loaded")
        if dims < 1 or dims > 8192:
            raise StoreError(f"invalid vector dimension {dims}")
        self.db.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS chunks_vec USING vec0("
            f"embedding float[{int(dims)}] distance_metric=cosine)"
        )

    def put_vectors(self, rows: Iterable[tuple[int, bytes]]) -> None:
        """Store chunk vectors (float32 bytes) and mark those chunks embedded."""
        rows = list(rows)
        self._bump_vectors()
        self.db.executemany("DELETE FROM chunks_vec WHERE rowid=?", ((i,) for i, _ in rows))
        self.db.executemany("INSERT INTO chunks_vec(rowid, embedding) VALUES(?, ?)", rows)
        self.db.executemany("UPDATE chunks SET embedded=1 WHERE id=?", ((i,) for i, _ in rows))

    def _bump_vectors(self) -> None:
        """Tell readers holding vectors in memory that they changed."""
        self.meta_set("vectorsVersion", f"{time.time_ns()}")

    def vector_dims(self) -> int | None:
        """Dimensions of the vector table, if there is one."""
        if not self.has_vectors():
            return None
        row = self.db.execute("SELECT sql FROM sqlite_master WHERE name='chunks_vec'").fetchone()
        m = re.search(r"float\[(\d+)\]", str(row[0]) if row else "")
        return int(m.group(1)) if m else None

    def drop_vectors(self) -> None:
        """Forget every vector (a new provider or model): chunks become pending."""
        if self.has_vectors():
            self.db.execute("DROP TABLE chunks_vec")
            self._bump_vectors()
        self.db.execute("UPDATE chunks SET embedded=0 WHERE embedded<>0")

    def pending_chunks(self, limit: int, after: int = 0) -> list[tuple[int, str, str]]:
        """Chunks without a vector yet, by id after ``after``: (id, hash, text)."""
        return [
            (int(i), str(h), str(t))
            for i, h, t in self.db.execute(
                "SELECT id, hash, text FROM chunks WHERE embedded=0 AND id>? ORDER BY id LIMIT ?",
                (after, limit),
            )
        ]

    def _rows_in(
        self, sql: str, keys: Sequence[Any], before: Sequence[Any] = ()
    ) -> Iterator[tuple[Any, ...]]:
        """Rows of ``sql`` for every key, ``{marks}`` in it standing for the ``IN``
        list; asked 400 keys at a time (SQLite limits a statement's parameters)."""
        for start in range(0, len(keys), 400):
            part = list(keys[start : start + 400])
            yield from self.db.execute(
                sql.format(marks=",".join("?" * len(part))), [*before, *part]
            )

    def texts_for_hashes(self, hashes: Sequence[str]) -> dict[str, str]:
        rows = self._rows_in("SELECT hash, text FROM chunks WHERE hash IN ({marks})", hashes)
        return {str(h): str(t) for h, t in rows}

    # -- batch jobs ------------------------------------------------------------------

    def batch_jobs(self, provider: str) -> dict[str, list[str]]:
        return {
            str(i): list(json.loads(h))
            for i, h in self.db.execute(
                "SELECT id, hashes FROM batch_jobs WHERE provider=? ORDER BY created_at",
                (provider,),
            )
        }

    def save_batch_job(self, job_id: str, provider: str, hashes: Sequence[str]) -> None:
        self.db.execute(
            "INSERT INTO batch_jobs(id, provider, hashes, created_at) VALUES(?, ?, ?, ?)",
            (job_id, provider, json.dumps(list(hashes)), time.time()),
        )

    def delete_batch_job(self, job_id: str) -> None:
        self.db.execute("DELETE FROM batch_jobs WHERE id=?", (job_id,))

    def all_batch_jobs(self) -> list[dict[str, Any]]:
        return [
            {"id": i, "provider": p, "chunks": len(json.loads(h)), "createdAt": c}
            for i, p, h, c in self.db.execute(
                "SELECT id, provider, hashes, created_at FROM batch_jobs ORDER BY created_at"
            )
        ]

    def has_source(self, source: str) -> bool:
        row = self.db.execute(
            "SELECT EXISTS(SELECT 1 FROM files WHERE source=?)", (source,)
        ).fetchone()
        return bool(row and row[0])

    def any_embedded(self) -> bool:
        row = self.db.execute("SELECT EXISTS(SELECT 1 FROM chunks WHERE embedded=1)").fetchone()
        return bool(row and row[0])

    def pending_count(self) -> int:
        row = self.db.execute("SELECT count(*) FROM chunks WHERE embedded=0").fetchone()
        return int(row[0]) if row else 0

    def vectors_for(self, ids: Sequence[int]) -> dict[int, bytes]:
        if not self.has_vectors():
            return {}
        rows = self._rows_in(
            "SELECT rowid, embedding FROM chunks_vec WHERE rowid IN ({marks})", ids
        )
        return {int(r): bytes(v) for r, v in rows}

    def all_vectors(self) -> Iterator[tuple[int, str, str, bytes]]:
        """(chunk id, source, chunk hash, vector) for every embedded chunk."""
        if not self.has_vectors():
            return iter(())
        return (
            (int(i), str(s), str(h), bytes(v))
            for i, s, h, v in self.db.execute(
                "SELECT c.id, c.source, c.hash, v.embedding "
                "FROM chunks_vec v JOIN chunks c ON c.id = v.rowid"
            )
        )

    def chunk_hashes(self, ids: Sequence[int]) -> dict[int, str]:
        """The text hash of each chunk that still exists."""
        rows = self._rows_in("SELECT id, hash FROM chunks WHERE id IN ({marks})", ids)
        return {int(i): str(h) for i, h in rows}

    def chunk_rows(
        self, ids: Sequence[int], ranks: dict[int, float] | None = None
    ) -> dict[int, SearchRow]:
        """Rows by id (``ranks``: the rank to give each, else 0); missing ids are left out."""
        rank = ranks or {}
        rows = [SearchRow.pending(i, "", rank.get(i, 0.0)) for i in ids]
        self.load_rows(rows)
        return {r.id: r for r in rows if r.loaded}

    def load_rows(self, rows: Iterable[SearchRow]) -> None:
        """Read the pending rows among ``rows`` (one query); deleted chunks stay
        unloaded."""
        todo = {r.id: r for r in rows if not r.loaded}
        sql = (
            "SELECT id, path, source, start_line, end_line, heading, text FROM chunks "
            "WHERE id IN ({marks})"
        )
        for i, p, s, a, b, h, t in self._rows_in(sql, list(todo)):
            r = todo[i]
            r.path, r.source, r.start_line, r.end_line, r.heading, r.text = p, s, a, b, h, t
            r.loaded = True

    # -- embedding cache ------------------------------------------------------------

    def cache_get(self, provider: str, hashes: Sequence[str]) -> dict[str, bytes]:
        now = time.time()
        sql = "SELECT hash, vector FROM embedding_cache WHERE provider=? AND hash IN ({marks})"
        out = {str(h): bytes(v) for h, v in self._rows_in(sql, hashes, (provider,))}
        if out and not self.readonly:
            self.db.executemany(
                "UPDATE embedding_cache SET last_used=? WHERE provider=? AND hash=?",
                ((now, provider, h) for h in out),
            )
        return out

    def cache_put(self, provider: str, dims: int, items: Iterable[tuple[str, bytes]]) -> None:
        now = time.time()
        self.db.executemany(
            "INSERT INTO embedding_cache(provider, hash, dims, vector, last_used) "
            "VALUES(?, ?, ?, ?, ?) ON CONFLICT(provider, hash) DO UPDATE SET "
            "vector=excluded.vector, dims=excluded.dims, last_used=excluded.last_used",
            ((provider, h, dims, v, now) for h, v in items),
        )

    def cache_prune(self, max_entries: int) -> int:
        """Drop the least recently used entries above ``max_entries``."""
        row = self.db.execute("SELECT count(*) FROM embedding_cache").fetchone()
        extra = (int(row[0]) if row else 0) - max_entries
        if extra <= 0:
            return 0
        self.db.execute(
            "DELETE FROM embedding_cache WHERE (provider, hash) IN (SELECT provider, hash "
            "FROM embedding_cache ORDER BY last_used LIMIT ?)",
            (extra,),
        )
        return extra

    def cache_count(self) -> int:
        row = self.db.execute("SELECT count(*) FROM embedding_cache").fetchone()
        return int(row[0]) if row else 0

    def knn(self, query: bytes, k: int) -> list[tuple[int, float]]:
        """Nearest chunks by cosine distance: [(chunk id, distance)]."""
        return [
            (int(r), float(d))
            for r, d in self.db.execute(
                "SELECT rowid, distance FROM chunks_vec WHERE embedding MATCH ? AND k = ?",
                (query, k),
            )
        ]

    # -- search ------------------------------------------------------------------------

    def fts_search(
        self,
        match: str,
        limit: int,
        sources: Sequence[str] | None = None,
        weights: tuple[float, float, float] = FTS_WEIGHTS,
        *,
        fts5_idf: bool = False,
        after_id: int | None = None,
        idfs: Mapping[str, float] | None = None,
    ) -> list[SearchRow]:
        """Top ``limit`` chunks for an FTS5 MATCH expression, best first, ranked by
        bm25.py's BM25 (``fts5_idf``: FTS5's own ``bm25()``, for the anchors' bench).
        ``after_id``: only chunks with a higher id (those added since a snapshot);
        ``idfs``: IDFs of tokens known already (bm25.py), not counted again.

        Ranks inside the FTS table and joins only the top rows (joining first would
        read every matching chunk's text). A source filter is part of the MATCH, so
        it applies before the LIMIT."""
        if sources:
            wanted = " OR ".join('source:"' + s.replace('"', '""') + '"' for s in sources)
            match = f"({match}) AND ({wanted})"
        rank = (
            "bm25(chunks_fts, ?, ?, ?, 0.0"
            if fts5_idf
            else f"{bm25.SQL_FUNCTION}(chunks_fts, ?, ?, ?, 0.0"
        )
        extra: tuple[str, ...] = ()
        if idfs and not fts5_idf:
            rank, extra = rank + ", ?", (json.dumps(dict(idfs)),)
        sql = (
            "SELECT c.id, c.path, c.source, c.start_line, c.end_line, c.heading, c.text, f.rank "
            f"FROM (SELECT rowid, {rank}) AS rank FROM chunks_fts "
            "WHERE chunks_fts MATCH ? AND rowid > ? ORDER BY rank LIMIT ?) f "
            "JOIN chunks c ON c.id = f.rowid ORDER BY f.rank"
        )
        args = (*weights, *extra, match, -1 if after_id is None else after_id, limit)
        try:
            rows: list[tuple[Any, ...]] = self.db.execute(sql, args).fetchall()
        except apsw.SQLError as exc:  # a MATCH expression FTS5 rejects
            raise StoreError(f"keyword query rejected: {exc}") from exc
        return [
            SearchRow(int(i), str(p), str(s), int(a), int(b), str(h), str(t), float(r))
            for i, p, s, a, b, h, t, r in rows
        ]

    # -- status ------------------------------------------------------------------------

    def counts(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for source, n in self.db.execute("SELECT source, count(*) FROM files GROUP BY source"):
            out.setdefault(str(source), {"files": 0, "chunks": 0})["files"] = int(n)
        for source, n in self.db.execute("SELECT source, count(*) FROM chunks GROUP BY source"):
            out.setdefault(str(source), {"files": 0, "chunks": 0})["chunks"] = int(n)
        return out

    def versions(self) -> dict[str, str | None]:
        return {
            "binding": f"apsw {apsw.apsw_version()}",
            "sqlite": apsw.sqlite_lib_version(),
            "sqliteVec": self.vec_version,
        }

    def copy_carryover(self, other: Path) -> int:
        """Copy the embedding cache and open batch jobs of another index file (a
        rebuild keeps every vector already paid for). Returns cache rows copied."""
        self.db.execute("ATTACH DATABASE ? AS old", (str(other),))
        try:
            with self.transaction():
                self.db.execute(
                    "INSERT OR IGNORE INTO main.embedding_cache "
                    "SELECT provider, hash, dims, vector, last_used FROM old.embedding_cache"
                )
                self.db.execute(
                    "INSERT OR IGNORE INTO main.batch_jobs "
                    "SELECT id, provider, hashes, created_at, polled_at FROM old.batch_jobs"
                )
        finally:
            self.db.execute("DETACH DATABASE old")
        return self.cache_count()

    def checkpoint(self) -> None:
        """Fold the WAL into the database file (before a generation is published)."""
        self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def integrity(self) -> str:
        row = self.db.execute("PRAGMA integrity_check").fetchone()
        return str(row[0]) if row else "unknown"

    def consistency(self) -> list[str]:
        """Problems that a crash or a bug could leave behind, [] when there are none:
        SQLite's integrity check, chunks of no indexed file or transcript, duplicate
        chunks, FTS rows without a chunk (or the reverse), vectors without a chunk and
        chunks marked embedded that have no vector."""
        problems: list[str] = []
        ok = self.integrity()
        if ok != "ok":
            problems.append(f"integrity_check: {ok}")

        def count(sql: str) -> int:
            row = self.db.execute(sql).fetchone()
            return int(row[0]) if row else 0

        checks = [
            (
                "chunks of no indexed file or transcript",
                "SELECT count(*) FROM chunks c WHERE c.path NOT IN (SELECT path FROM files) "
                "AND c.path NOT IN (SELECT path FROM session_cursors)",
            ),
            (
                "duplicate chunks (same path and lines)",
                "SELECT count(*) FROM (SELECT 1 FROM chunks GROUP BY path, start_line, end_line "
                "HAVING count(*) > 1)",
            ),
            (
                "FTS rows without a chunk",
                "SELECT count(*) FROM chunks_fts_docsize WHERE id NOT IN (SELECT id FROM chunks)",
            ),
            (
                "chunks missing from FTS",
                "SELECT count(*) FROM chunks WHERE id NOT IN (SELECT id FROM chunks_fts_docsize)",
            ),
        ]
        if self.has_vectors():
            checks += [
                (
                    "vectors without a chunk",
                    "SELECT count(*) FROM chunks_vec WHERE rowid NOT IN (SELECT id FROM chunks)",
                ),
                (
                    "chunks marked embedded without a vector",
                    "SELECT count(*) FROM chunks WHERE embedded = 1 "
                    "AND id NOT IN (SELECT rowid FROM chunks_vec)",
                ),
            ]
        for what, sql in checks:
            n = count(sql)
            if n:
                problems.append(f"{n} {what}")
        return problems

    def size_bytes(self) -> int:
        total = 0
        for suffix in ("", "-wal"):
            with contextlib.suppress(OSError):
                total += os.path.getsize(str(self.file) + suffix)
        return total
