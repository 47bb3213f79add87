"""Connections to PostgreSQL: one psycopg pool per URL and process, migrations, the
advisory-lock keys, and ``PgTarget`` (which database and agent a store reads)."""

from __future__ import annotations

import contextlib
import functools
import os
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from indexer.config import database_location
from indexer.config import redact_url as redact
from indexer.errors import RowRejected, StoreError
from indexer.store.postgres.schema import PG_MIGRATIONS
from providers.errors import install_hint

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

    _Connection = psycopg.Connection[Any]
else:
    _Connection = object  # psycopg is imported when a connection is first made

__all__ = [
    "GEN_TABLES",
    "PgTarget",
    "close_pools",
    "connect",
    "gen_of",
    "lock_key",
    "migrate",
    "redact",
    "reserve",
    "store_errors",
    "writer_label",
]


@dataclass(frozen=True)
class PgTarget:
    """One agent's index in one database."""

    url: str  # where writes go
    read_url: str  # where searches read (a replica, or ``url``)
    agent: str
    pool_size: int

    @property
    def where(self) -> str:
        return database_location(self.url, self.agent)

    def generation_name(self, gen: int) -> str:
        return f"{self.where} g{gen}"


def gen_of(name: str) -> int:
    """The generation number in a ``generation_name``."""
    return int(name.rsplit(" g", 1)[1])


_POOLS: dict[str, ConnectionPool] = {}
# url -> (time.monotonic(), error) of its last failed connection attempt, cleared by
# a success: a request fails at once while the server is away (``connect``)
_REFUSED: dict[str, tuple[float, str]] = {}
_WAIT = 30.0  # seconds a request waits for a connection while every one is busy
_RESERVED: dict[str, dict[str, int]] = {}  # url -> agent -> connections (``reserve``)
_POOLS_LOCK = threading.Lock()
_MIGRATED: set[str] = set()


def reserve(url: str, agent: str, size: int) -> None:
    """Make room in this process's pool for ``url`` for ``size`` connections of
    ``agent`` (the daemon: each agent it serves on the database reserves its
    ``poolSize``; an agent reloaded by SIGHUP reserves again, not twice)."""
    with _POOLS_LOCK:
        _RESERVED.setdefault(url, {})[agent] = size
        total = sum(_RESERVED[url].values())
        pool = _POOLS.get(url)
        if pool is not None and pool.max_size < total:
            pool.resize(pool.min_size, total)


def _pool(url: str, size: int) -> ConnectionPool:
    with _POOLS_LOCK:
        size = max(size, sum(_RESERVED.get(url, {}).values()))
        pool = _POOLS.get(url)
        if pool is None:
            try:
                from psycopg_pool import ConnectionPool
            except ImportError as exc:
                raise StoreError(
                    "a PostgreSQL store needs psycopg: " + install_hint("postgresql")
                ) from exc
            pool = ConnectionPool(
                url,
                connection_class=_connection_class(),
                min_size=0,
                max_size=max(2, size),
                kwargs={"autocommit": True, "application_name": "memindex"},
                timeout=_WAIT,
                # an idle connection is checked before it is handed out: one the
                # server dropped (a restart) is replaced instead of failing a request
                check=ConnectionPool.check_connection,
                # a connection attempt is retried (1 s, 2 s, 4 s ...) for this long,
                # then given up; the next request starts a new one at once. The
                # default, 300 s, left a daemon waiting minutes on its back-off
                # after the server was back.
                reconnect_timeout=10.0,
                open=True,
                name="memindex",
            )
            _POOLS[url] = pool
        return pool


@contextlib.contextmanager
def store_errors(url: str) -> Iterator[None]:
    """psycopg's errors as StoreError, naming the server (without its password)."""
    import psycopg

    try:
        yield
    except (psycopg.errors.DataError, psycopg.errors.ProgramLimitExceeded) as exc:
        # SQLSTATE classes 22 and 54: the values sent, not the server, are the trouble
        raise RowRejected(f"PostgreSQL refused it: {exc.diag.message_primary or exc}") from exc
    except psycopg.Error as exc:
        raise StoreError(f"PostgreSQL at {redact(url)}: {exc}") from exc


class _LazySavepoints(_Connection):
    """The savepoints of ``_connection_class``'s connections: each is sent just before
    the first statement that runs inside it."""

    pending: list[str]  # savepoints asked for, not sent yet (oldest first)
    sent: list[str]  # ... and those sent, not ended yet

    def lazy_savepoint(self) -> str:
        """A savepoint that is sent before the next statement (any statement on
        this connection: ``execute``, ``cursor``, a ``transaction`` block); end it
        with ``end_savepoint``. One that nothing ran in costs no round trip (a
        file read that writes nothing: two a file)."""
        name = f"memindex_{len(self.pending) + len(self.sent)}"
        self.pending.append(name)
        return name

    def end_savepoint(self, name: str, *, rollback: bool) -> bool:
        """Release ``name`` (rolled back first with ``rollback``); False when it
        was never sent (nothing ran inside it: nothing to undo)."""
        if self.pending and self.pending[-1] == name:
            self.pending.pop()
            return False
        if not self.sent or self.sent[-1] != name:  # ended out of order: a bug
            raise RuntimeError(f"savepoint {name} is not the innermost: {self.sent}")
        self.sent.pop()
        if rollback:  # psycopg's own execute: sends no pending savepoint first
            super().execute(f"ROLLBACK TO SAVEPOINT {name}", prepare=False)
        super().execute(f"RELEASE SAVEPOINT {name}", prepare=False)
        return True

    def _send_pending(self) -> None:
        pending, self.pending = self.pending, []
        for i, name in enumerate(pending):
            try:
                super().execute(f"SAVEPOINT {name}", prepare=False)
            except BaseException:
                self.pending = pending[i:]  # not sent: their ends undo nothing
                raise
            self.sent.append(name)

    def execute(self, *args: Any, **kwargs: Any) -> Any:
        if self.pending:
            self._send_pending()
        return super().execute(*args, **kwargs)

    def cursor(self, *args: Any, **kwargs: Any) -> Any:
        if self.pending:
            self._send_pending()
        return super().cursor(*args, **kwargs)

    def transaction(self, *args: Any, **kwargs: Any) -> Any:
        if self.pending:
            self._send_pending()
        return super().transaction(*args, **kwargs)


@functools.cache
def _connection_class() -> type:
    """psycopg's Connection, noting each connection attempt's outcome in ``_REFUSED``
    (the pool connects on its own threads; this is how a waiting request learns
    that the server refused), with savepoints sent only when a statement runs inside
    them (``lazy_savepoint``)."""
    import psycopg

    base = psycopg.Connection

    class _Noted(_LazySavepoints, base):  # type: ignore[valid-type,misc]
        @classmethod
        def connect(cls, conninfo: str = "", **kwargs: Any) -> Any:
            try:
                conn = super().connect(conninfo, **kwargs)
            except Exception as exc:
                _REFUSED[conninfo] = (time.monotonic(), str(exc).strip())
                raise
            _REFUSED.pop(conninfo, None)
            conn.pending, conn.sent = [], []
            return conn

    return _Noted


def _getconn(pool: ConnectionPool, url: str) -> psycopg.Connection[Any]:
    """A connection from ``pool``: waits up to ``_WAIT`` while all are busy, but fails
    within about a second when an attempt to connect made meanwhile failed (the
    server is down: a search or ``status`` says so instead of hanging 30 s)."""
    from psycopg_pool import PoolTimeout

    start = time.monotonic()
    while True:
        left = _WAIT - (time.monotonic() - start)
        try:
            return pool.getconn(timeout=max(0.05, min(1.0, left)))
        except PoolTimeout as exc:
            refused = _REFUSED.get(url)
            if refused is not None and refused[0] >= start:
                raise StoreError(
                    f"cannot connect to PostgreSQL at {redact(url)}: {refused[1]}"
                ) from exc
            if left <= 1.0:
                raise StoreError(
                    f"cannot connect to PostgreSQL at {redact(url)}: no connection free "
                    f"after {_WAIT:g} s ({exc})"
                ) from exc


@contextlib.contextmanager
def connect(url: str, size: int = 8) -> Iterator[psycopg.Connection[Any]]:
    """A pooled connection (autocommit; psycopg errors become StoreError)."""
    pool = _pool(url, size)
    try:
        conn = _getconn(pool, url)
    except StoreError:
        raise
    except Exception as exc:  # OperationalError, a closed pool
        raise StoreError(f"cannot connect to PostgreSQL at {redact(url)}: {exc}") from exc
    try:
        with store_errors(url):
            yield conn
    finally:
        conn.pending, conn.sent = [], []  # type: ignore[attr-defined]  # (a failure's leftovers)
        pool.putconn(conn)


def migrate(conn: psycopg.Connection[Any], url: str) -> None:
    """Apply the migrations not applied yet, one transaction each, under a lock (many
    hosts may start at once)."""
    if url in _MIGRATED:
        return
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(hashtext('memindex:migrate'))")
        conn.execute(
            "CREATE TABLE IF NOT EXISTS memindex_migrations("
            "name TEXT PRIMARY KEY, applied_at DOUBLE PRECISION NOT NULL)"
        )
        done = {r[0] for r in conn.execute("SELECT name FROM memindex_migrations")}
        for name, sql in PG_MIGRATIONS:
            if name in done:
                continue
            try:
                conn.execute(sql)  # our own constant SQL
            except Exception as exc:
                hint = ""
                if "vector" in str(exc):
                    hint = " (the database needs pgvector: CREATE EXTENSION vector, as a superuser)"
                raise StoreError(f"cannot migrate {redact(url)} ({name}): {exc}{hint}") from exc
            conn.execute(
                "INSERT INTO memindex_migrations(name, applied_at) VALUES (%s, %s)",
                (name, time.time()),
            )
    _MIGRATED.add(url)


def lock_key(kind: str, agent: str) -> str:
    return f"memindex:{kind}:{agent}"


# Every table keyed by (agent, gen), children before chunks (the change feed last:
# deleting chunks writes to it).
GEN_TABLES = (
    "chunk_terms",
    "chunk_vectors",
    "chunks",
    "chunk_changes",
    "files",
    "session_cursors",
    "skipped",
    "batch_jobs",
    "meta",
)


def writer_label() -> str:
    return f"{socket.gethostname()} pid {os.getpid()}"


def close_pools() -> None:
    """Close every pool this process opened (tests; a process exiting needs not)."""
    with _POOLS_LOCK:
        for pool in _POOLS.values():
            with contextlib.suppress(Exception):
                pool.close()
        _POOLS.clear()
        _RESERVED.clear()
        _MIGRATED.clear()
        _REFUSED.clear()
