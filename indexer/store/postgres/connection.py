"""The plumbing of a PostgreSQL store (``PgBase``): one pooled connection to one
agent's generation, transactions, meta and the reads every part needs (the agent's
writer lock is ``writer_lock.PgLock``, on a connection of its own).
``store.PgStore`` puts the parts together: ``tables`` (files, chunks, the
change feed, cursors), ``search`` (keyword search and vectors),
``cache`` (the shared embedding cache and batch jobs)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Self

from indexer.errors import StoreError
from indexer.store.postgres.board import VERSION_KEYS, VersionBoard
from indexer.store.postgres.connect import PgTarget, connect, store_errors
from indexer.store.records import SearchRow
from indexer.store.writer_lock import WriterLock

__all__ = ["PgBase"]

_IDLE, _INTRANS = 0, 2  # psycopg.pq.TransactionStatus (not imported: a lazy import)


class PgBase:
    db: Any  # the pooled psycopg connection; None once closed
    _stats: tuple[str | None, int, float] | None = None  # chunksVersion, rows, avgdl

    def __init__(self, target: PgTarget, gen: int, *, readonly: bool) -> None:
        self.target = target
        self.agent = target.agent
        self.gen = gen
        self.readonly = readonly
        self.generation = target.generation_name(gen)
        self._identity: str | None = None
        url = target.read_url if readonly else target.url
        self.url = url
        self._ctx = connect(url, target.pool_size)
        self.db = self._ctx.__enter__()
        self.writer_lock: WriterLock | None = None
        self.vector_error: str | None = None
        self.moved = False  # a reader found a newer generation published (``broken``)
        # the agent's writer's versions, where it is in this process (board.py)
        self.board: VersionBoard | None = None
        self._rows_written = 0  # chunks added since the GIN's pending list was merged
        self._rows_total = 0  # chunks this store has added
        self._rows_analyzed = 0  # ``_rows_total`` when it last analyzed
        self._spare_ids: list[int] = []  # chunk ids taken from the sequence, not used yet
        self._bumped: set[str] = set()  # change versions bumped in this transaction
        self._meta: dict[str, str] | None = None  # a reader snapshot's meta rows
        try:
            with self._errors():
                row = self.db.execute(
                    "SELECT extversion, to_regtype('vector')::oid FROM pg_extension "
                    "WHERE extname='vector'"
                ).fetchone()
        except StoreError:
            self.close()
            raise
        self.vec_version: str | None = str(row[0]) if row else None
        if row is not None and row[1] is not None:
            from indexer.store.postgres.vector_type import register_vector_type

            register_vector_type(self.db, int(row[1]))
        if self.vec_version is None:
            self.vector_error = "pgvector is not installed in the database"

    def close(self) -> None:
        lock, self.writer_lock = self.writer_lock, None
        if lock is not None:
            lock.release()
        if self.db is None:
            return
        with contextlib.suppress(Exception):
            if self.db.info.transaction_status != 0:  # not idle: roll back
                self.db.rollback()
        self._ctx.__exit__(None, None, None)
        self.db = None

    def broken(self) -> bool:
        """The server closed or lost this connection (a restart, a failover, a
        network cut): nothing on it can succeed again."""
        db = self.db
        return self.moved or db is None or bool(db.closed) or bool(db.broken)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- plumbing ----------------------------------------------------------------------

    def _errors(self) -> contextlib.AbstractContextManager[None]:
        return store_errors(self.url)

    def _q(
        self,
        sql: str,
        *args: Any,
        keyed: bool = True,
        before: Sequence[Any] = (),
        binary: bool = False,
    ) -> Any:
        """Run ``sql``: ``{k}`` stands for this agent's generation (its parameters go
        after ``before``); without it, a keyed statement starts with (agent, gen).
        ``binary``: results in binary format (arrays parse much faster)."""
        if "{k}" in sql:
            sql = sql.replace("{k}", "agent=%s AND gen=%s")
            params: tuple[Any, ...] = (*before, self.agent, self.gen, *args)
        elif keyed:
            params = (self.agent, self.gen, *args)
        else:
            params = (*before, *args)
        with self._errors():
            return self.db.execute(sql, params, binary=binary)

    # -- transactions and meta -------------------------------------------------------

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        outermost = self.db.info.transaction_status == _IDLE
        with self._errors(), self.db.transaction(), self._forgetting_bumps(outermost):
            yield

    @contextlib.contextmanager
    def read_snapshot(self) -> Iterator[None]:
        """Reads of one committed state; a reader's meta reads inside it are served
        from one read of the generation's meta rows. The outermost is a READ ONLY
        transaction and ends with COMMIT (nothing to commit): psycopg forgets every
        prepared statement of a connection on ROLLBACK, and a daemon's reader would
        plan its status and change-feed queries anew each time."""
        outermost = self.db.info.transaction_status == _IDLE
        with self._errors(), self.db.transaction(force_rollback=not outermost):
            if outermost:  # one snapshot
                self.db.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            cache = outermost and self.readonly
            try:
                if cache:
                    self._meta = {}
                yield
            finally:
                if cache:
                    self._meta = None

    @contextlib.contextmanager
    def savepoint(self) -> Iterator[None]:
        """A transaction when none is open, else a savepoint sent with the first
        statement inside it (none: no round trip)."""
        if self.db.info.transaction_status == _IDLE:
            with self.transaction():
                yield
            return
        name = self.db.lazy_savepoint()
        with self._forgetting_bumps(False):
            try:
                yield
            except BaseException:
                with self._errors():
                    self.db.end_savepoint(name, rollback=True)
                raise
            with self._errors():
                self.db.end_savepoint(name, rollback=False)

    @contextlib.contextmanager
    def _forgetting_bumps(self, outermost: bool) -> Iterator[None]:
        """Inside a transaction or savepoint block: the versions it bumped are
        forgotten when it commits (``outermost``) or is rolled back (an error, or
        psycopg's ``Rollback``, which its block swallows), so the next change
        writes them again (``_bump``)."""
        done = False
        try:
            yield
            done = True
        finally:
            if outermost or not done:
                self._bumped.clear()
            if not done:
                self._stats = None  # BM25's figures may have counted rows now gone

    @contextlib.contextmanager
    def batch(self) -> Iterator[Callable[[], None]]:
        def checkpoint() -> None:
            self.db.execute("COMMIT")
            self._bumped.clear()
            self.db.execute("BEGIN")

        with self._errors():
            self.db.execute("BEGIN")
            try:
                yield checkpoint
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
            finally:
                self._bumped.clear()
            self.db.execute("COMMIT")

    @property
    def identity(self) -> str:
        """The generation and when it was made: the agent's rows dropped and made
        again (a database restored, the schema wiped) start from generation 1 again,
        and are another index."""
        if self._identity is None:
            with self._errors():
                row = self._q("SELECT created_at FROM generations WHERE {k}").fetchone()
            self._identity = f"{self.generation}@{'' if row is None else row[0]!r}"
        return self._identity

    def meta_get(self, key: str) -> str | None:
        cached = self._meta
        if cached is not None:  # a reader's snapshot: every key read at the first
            if not cached:
                cached.update(self._q("SELECT key, value FROM meta WHERE {k}").fetchall())
                cached[""] = ""  # (read: even a generation without meta rows)
            got = cached.get(key)
            return None if got is None else str(got)
        row = self._q("SELECT value FROM meta WHERE {k} AND key=%s", key).fetchone()
        return None if row is None else str(row[0])

    def meta_set(self, key: str, value: str) -> None:
        if key in VERSION_KEYS and self.board is not None:
            self.board.clear()  # readers ask the database until the writer sets it again
        self._q(
            "INSERT INTO meta(agent, gen, key, value) VALUES (%s, %s, %s, %s) "
            "ON CONFLICT (agent, gen, key) DO UPDATE SET value=excluded.value",
            key,
            value,
        )

    def change_versions(self) -> tuple[str | None, str | None, str | None]:
        """The generation's change versions. A reader also learns, in the same round
        trip, which generation is published: when a rebuild has published a newer
        one, this reader is ``moved`` (``broken``: its caller opens a new reader)
        and StoreError is raised, so a search never asks the database which
        generation is current before it starts. A reader of the daemon takes both
        from its writer's board instead (board.py): no round trip."""
        seen = self.board.get() if self.readonly and self.board is not None else None
        published, versions = seen or self.published_versions(with_published=self.readonly)
        if self.readonly and published not in (None, self.gen):
            self.moved = True
            raise StoreError(f"{self.generation}: a newer generation was published")
        return versions

    def published_versions(
        self, *, with_published: bool = True
    ) -> tuple[int | None, tuple[str | None, str | None, str | None]]:
        """(the agent's published generation, this generation's change versions), in
        one statement; the generation is None when not asked for (or no row)."""
        sql = (
            "SELECT key, value FROM meta WHERE agent=%s AND gen=%s "
            "AND key IN ('chunksVersion', 'vectorsVersion', 'vectorKey')"
        )
        args: tuple[Any, ...] = (self.agent, self.gen)
        if with_published:
            sql += " UNION ALL SELECT '', published::text FROM agents WHERE agent=%s"
            args = (*args, self.agent)
        with self._errors():
            got = dict(self.db.execute(sql, args).fetchall())
        published = got.get("")
        versions = got.get("chunksVersion"), got.get("vectorsVersion"), got.get("vectorKey")
        return (None if published is None else int(published)), versions

    def _bump_chunks(self) -> None:
        self._bump("chunksVersion")

    def _bump_vectors(self) -> None:
        self._bump("vectorsVersion")

    def _bump(self, key: str) -> None:
        """Give the generation's ``key`` a new value: once per transaction (readers
        see its changes at its commit, all at once; a file a batch indexes would
        otherwise cost a statement for it). A savepoint rolled back, a commit or
        a rollback forgets what was bumped."""
        if key in self._bumped and self.db.info.transaction_status == _INTRANS:
            if self.board is not None:
                self.board.clear()
            self._stats = None  # BM25's corpus figures, cached by chunksVersion (search.py)
            return
        self.meta_set(key, f"{time.time_ns()}")
        if self.db.info.transaction_status == _INTRANS:
            self._bumped.add(key)

    # -- reads every part needs --------------------------------------------------------

    def change_seq(self) -> int:
        row = self._q("SELECT coalesce(max(seq), 0) FROM chunk_changes WHERE {k}").fetchone()
        seq = int(row[0]) if row else 0
        return max(seq, int(self.meta_get("changesPrunedTo") or 0))

    def chunk_rows(self, ids: Sequence[int]) -> dict[int, SearchRow]:
        """The rows of ``ids`` that exist. A daemon's reader takes those its writer's
        board keeps (board.py) and reads only the others."""
        board = self.board if self.readonly else None
        kept = None if board is None else board.cached_rows(self.gen, ids)
        if kept is None:
            return self._chunk_rows(ids)
        mark, got = kept
        missing = [i for i in ids if i not in got]
        if missing:
            fresh = self._chunk_rows(missing)
            board.keep_rows(mark, fresh)  # type: ignore[union-attr]
            got.update(fresh)
        return got

    def _evict_rows(self, ids: Sequence[int] | None) -> None:
        """Chunks ``ids`` (None: all) are being deleted or moved by this writer: the
        rows its readers keep go before it commits (board.py)."""
        if self.board is not None and not self.readonly:
            self.board.evict(ids)

    def _chunk_rows(self, ids: Sequence[int]) -> dict[int, SearchRow]:
        rows = self._q(
            "SELECT id, path, source, start_line, end_line, heading, text, lines, at, origin "
            "FROM chunks WHERE {k} AND id = ANY(%s)",
            list(ids),
        )
        return {
            int(i): SearchRow(int(i), str(p), str(s), int(a), int(b), str(h), str(t), 0.0, m, w, o)
            for i, p, s, a, b, h, t, m, w, o in rows
        }

    def window_ids(
        self, paths: Sequence[str], start: float, end: float, limit: int
    ) -> list[tuple[int, float | None]]:
        out: list[tuple[int, float | None]] = [
            (int(i), None)
            for (i,) in self._q(
                "SELECT id FROM chunks WHERE {k} AND path = ANY(%s) ORDER BY path, start_line",
                list(paths),
            )
        ]
        timed = self._q(
            "SELECT id, at FROM chunks WHERE {k} AND at >= %s AND at < %s "
            "ORDER BY at DESC, id LIMIT %s",
            start,
            end,
            limit,
        )
        out += [(int(i), float(a)) for i, a in timed]
        return out

    def has_vectors(self) -> bool:
        return self.vec_version is not None and self.vector_dims() is not None

    def vector_dims(self) -> int | None:
        got = self.meta_get("vectorDims")
        return int(got) if got else None
