"""Opening an index file: connection, pragmas, migrations, transactions, meta."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import secrets
import stat
import time
import urllib.parse
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Self

import apsw

from indexer.errors import IndexCorrupt, StoreError, file_kind
from indexer.store import bm25
from indexer.store.records import DAEMON_MMAP_BYTES, INDEX_ID, MMAP_BYTES
from indexer.store.sqlite.generations import current_file
from indexer.store.sqlite.migrations import MIGRATIONS
from indexer.store.writer_lock import WriterLock


def private_file(path: Path) -> None:
    """Create ``path`` mode 0600 if missing, and make an existing one 0600: index
    files hold the agent's memory and transcripts (SQLite gives its -wal and -shm
    files the database file's mode)."""
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags, 0o600)
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


_BUSY_MS = 10_000  # how long a connection waits for another's lock


def _open_readonly(path: Path) -> apsw.Connection:
    """A read-only connection. A WAL database needs its ``-shm`` file, which SQLite
    cannot make in a folder it may not write (a read-only file system, a backup
    mounted read-only): there, with nobody able to write the file either, it is
    opened ``immutable``."""
    db = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    # Waits, as every connection does, for another one closing the file (the last
    # one out checkpoints the WAL): without it two MCP tool calls opening the index
    # at once answered "database is locked" (CI, round 6).
    db.set_busy_timeout(_BUSY_MS)
    try:
        db.execute("SELECT count(*) FROM sqlite_master").fetchone()  # opens the file
        return db
    except apsw.CantOpenError as exc:
        db.close()
        folder = os.path.dirname(os.path.realpath(path))
        if os.access(folder, os.W_OK):
            raise
        uri = "file:" + urllib.parse.quote(os.path.realpath(path)) + "?immutable=1"
        try:
            db = apsw.Connection(uri, flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
            db.set_busy_timeout(_BUSY_MS)
            db.execute("SELECT count(*) FROM sqlite_master").fetchone()
            return db
        except apsw.Error:
            raise StoreError(
                f"cannot open index {path}: its folder {folder} is read-only (or not "
                "yours) and the index cannot be read without writing beside it"
            ) from exc


def _refuse_special(path: Path) -> None:
    """The index file (``path``: the generation behind the index path, never followed
    further) that is anything but a regular file is refused at once, as every other
    path memindex reads: SQLite would wait on a FIFO for as long as it is there. A
    writer sets it aside as it does a damaged file and starts a new index."""
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return
    except OSError as exc:
        raise StoreError(f"cannot open index {path}: {exc.strerror or exc}") from exc
    if not stat.S_ISREG(st.st_mode):
        raise IndexCorrupt(f"index {path} is {file_kind(st.st_mode)}, not an index file")


_MMAP = [MMAP_BYTES]  # this process's mmap_size (records.py)


def use_daemon_mmap() -> None:
    """Connections opened from now on map DAEMON_MMAP_BYTES (a long-running daemon)."""
    _MMAP[0] = DAEMON_MMAP_BYTES


class StoreBase:
    """An open index file: what every part of the store builds on."""

    def __init__(self, path: Path, *, readonly: bool = False) -> None:
        self.path = path
        self.file = current_file(path)  # the generation behind the path (ForeignLink)
        self.generation = str(self.file)
        self.readonly = readonly
        self.writer_lock: WriterLock | None = None
        self.vector_error: str | None = None
        self.vec_version: str | None = None
        _refuse_special(self.file)
        if readonly and not self.file.exists():
            raise StoreError(f"no index at {path}: run 'memindex index' first")
        try:
            if readonly:
                self.db = _open_readonly(self.file)
            else:
                private_dir(path.parent)
                private_file(self.file)
                flags = apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE
                self.db = apsw.Connection(str(self.file), flags=flags)
            st = os.stat(self.file)
            self._ident = (st.st_dev, st.st_ino)  # the file this connection has open
            self.db.set_busy_timeout(_BUSY_MS)
            # Reads the header and the schema's pages: a damaged file says so here,
            # not as "Getting the FTS5 API failed" from the registration below.
            self.db.execute("SELECT count(*) FROM sqlite_master").fetchone()
            bm25.register(self.db)
            # Reads through a memory map, not read() into SQLite's 2 MB page cache:
            # fetching the rows of a search's candidates at 100k chunks took half the
            # time (bench/hybrid_bench.py). The pages are the OS's file cache, shared
            # by every connection; nothing here truncates an index file in place.
            self.db.execute(f"PRAGMA mmap_size={_MMAP[0]}")
            if not readonly:
                self.db.execute("PRAGMA journal_mode=WAL")
                self.db.execute("PRAGMA synchronous=NORMAL")
            self._load_vec()
            if not readonly:
                self._migrate()
            elif not self._has_table("schema_migrations"):
                raise StoreError(f"{path} is not a memindex index (run 'memindex index' first)")
            self.identity = self._identity()
        except (apsw.NotADBError, apsw.CorruptError) as exc:
            with contextlib.suppress(apsw.Error, AttributeError):
                self.db.close()
            raise IndexCorrupt(
                f"index {path} is damaged ({exc}); it holds only what memindex derived "
                "from your files: 'memindex index' (or the daemon) sets it aside and "
                "builds a new one"
            ) from exc
        except apsw.Error as exc:
            raise StoreError(f"cannot open index {path}: {exc}") from exc
        except OSError as exc:
            raise StoreError(f"cannot create index directory {path.parent}: {exc}") from exc

    def close(self) -> None:
        try:
            self.db.close()
        finally:
            lock, self.writer_lock = self.writer_lock, None
            if lock is not None:
                lock.release()

    def __enter__(self) -> Self:
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

    def _identity(self) -> str:
        """The generation and the id its first writer gave the file (``INDEX_ID``): a
        file deleted and made again under the same name, whose inode number the
        file system may well give again, is another index. A file no writer has
        opened since ids were given is told by its inode."""
        made = self.meta_get(INDEX_ID)
        if made is None and not self.readonly:
            made = secrets.token_hex(8)
            self.meta_set(INDEX_ID, made)
        if made is None:
            return f"{self.generation}@{self._ident[0]}:{self._ident[1]}"
        return f"{self.generation}#{made}"

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

    def _bump_chunks(self) -> None:
        """Tell readers holding keyword postings in memory that chunks changed."""
        self.meta_set("chunksVersion", f"{time.time_ns()}")

    def has_vectors(self) -> bool:
        return self.vec_version is not None and self._has_table("chunks_vec")

    def _bump_vectors(self) -> None:
        """Tell readers holding vectors in memory that they changed."""
        self.meta_set("vectorsVersion", f"{time.time_ns()}")

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
