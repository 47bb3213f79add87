"""PostgreSQL + pgvector: one database for many agents on many hosts.

``PostgresBackend`` is the ``Backend`` of one agent in a database named by
``[store] url`` (or ``MEMINDEX_DATABASE_URL``); searches may read from a replica
(``[store] readUrl``). Connections come from one psycopg pool per URL and process.

Each agent has at most one writer at a time: a writable store holds the agent's
``writer_lock.PgLock`` (a session advisory lock on a connection of its own, released
when it closes, so a killed writer frees it), and a second writer gets IndexBusy
naming the holder. A rebuild holds a
second lock. Generations are rows: ``agents.published`` names the one searches read,
and ``publish`` sets it in one transaction, so a reader sees the old or the new
generation, never a mix. The tables are in ``schema``; the operations in
``store``.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from indexer.errors import StoreError
from indexer.store.postgres.board import VersionBoard
from indexer.store.postgres.connect import (
    GEN_TABLES,
    PgTarget,
    connect,
    gen_of,
    lock_key,
    migrate,
    redact,
    reserve,
)
from indexer.store.postgres.connection import PgBase
from indexer.store.writer_lock import PgLock, WriterLock, holder_label

if TYPE_CHECKING:
    import psycopg

    from indexer.config import Config
    from indexer.store.base import IndexStore
    from indexer.store.postgres.store import PgStore

__all__ = ["PostgresBackend"]


class PostgresBackend:
    kind = "postgresql"
    readers_see_publish = True  # with the change versions, in one round trip

    def __init__(
        self, url: str, agent: str, *, read_url: str = "", pool_size: int = 8, label: str = ""
    ) -> None:
        self.target = PgTarget(url, read_url or url, agent, pool_size)
        self.where = self.target.where
        self.label = label or holder_label()
        # The writer's change versions for readers in this process; not when they
        # read a replica, which may lag behind what the writer committed.
        self.board = VersionBoard() if self.target.read_url == url else None

    @classmethod
    def for_config(cls, cfg: Config, url: str, *, label: str = "") -> PostgresBackend:
        return cls(
            url,
            cfg.agent_name,
            read_url=cfg.store.readUrl,
            pool_size=cfg.store.poolSize,
            label=label,
        )

    def _published(self, conn: psycopg.Connection[Any]) -> int | None:
        row = conn.execute(
            "SELECT published FROM agents WHERE agent=%s", (self.target.agent,)
        ).fetchone()
        return None if row is None else int(row[0])

    def exists(self) -> bool:
        with connect(self.target.read_url, self.target.pool_size) as conn:
            try:
                return self._published(conn) is not None
            except Exception:  # no tables yet (a replica of a database never written)
                return False

    def open(self, *, readonly: bool = False, lock: WriterLock | None = None) -> IndexStore:
        return self._open(None, readonly=readonly, held=lock)

    def _open(self, gen: int | None, *, readonly: bool, held: WriterLock | None = None) -> PgStore:
        from indexer.store.postgres.store import PgStore

        writer_lock: WriterLock | None = None
        if not readonly:
            with connect(self.target.url, self.target.pool_size) as conn:
                migrate(conn, self.target.url)
                if gen is None:
                    gen = self._ensure_agent(conn)
                    writer_lock = self._writer_lock(held)
        elif gen is None:
            with connect(self.target.read_url, self.target.pool_size) as conn:
                try:
                    gen = self._published(conn)
                except Exception as exc:
                    raise StoreError(
                        f"no memindex tables in {redact(self.target.read_url)}"
                    ) from exc
            if gen is None:
                raise StoreError(
                    f"no index for agent {self.target.agent} in {redact(self.target.read_url)}: "
                    "run 'memindex index'"
                )
        try:
            store = PgStore(self.target, gen, readonly=readonly)
        except BaseException:
            if writer_lock is not None and writer_lock is not held:
                writer_lock.release()
            raise
        store.writer_lock = writer_lock
        store.board = self.board
        return store

    def _writer_lock(self, held: WriterLock | None) -> WriterLock:
        """The agent's writer lock: ``held`` (taken again if it was lost), or new."""
        if held is None:
            key = lock_key("writer", self.target.agent)
            return PgLock(self.target.url, self.target.agent, key, self.label, self.where)
        if held.lost():
            held.retake()
        return held

    def _ensure_agent(self, conn: psycopg.Connection[Any]) -> int:
        with conn.transaction():
            conn.execute(
                "INSERT INTO agents(agent, published) VALUES (%s, 1) ON CONFLICT DO NOTHING",
                (self.target.agent,),
            )
            conn.execute(
                "INSERT INTO generations(agent, gen, created_at) VALUES (%s, 1, %s) "
                "ON CONFLICT DO NOTHING",
                (self.target.agent, time.time()),
            )
            gen = self._published(conn)
        assert gen is not None
        return gen

    def current(self) -> str:
        with connect(self.target.read_url, self.target.pool_size) as conn:
            return self.generation_name(self._published(conn) or 0)

    def generation_name(self, gen: int) -> str:
        return self.target.generation_name(gen)

    @contextlib.contextmanager
    def rebuild_lock(self) -> Iterator[None]:
        with connect(self.target.url, self.target.pool_size) as conn:
            key = lock_key("rebuild", self.target.agent)
            row = conn.execute("SELECT pg_try_advisory_lock(hashtext(%s))", (key,)).fetchone()
            if not (row and row[0]):
                raise StoreError(
                    f"another memindex process is rebuilding {self.where}: try again when "
                    "it is done"
                )
            try:
                yield
            finally:
                conn.execute("SELECT pg_advisory_unlock(hashtext(%s))", (key,))

    def abandoned(self) -> list[str]:
        with connect(self.target.url, self.target.pool_size) as conn:
            rows = conn.execute(
                "SELECT gen FROM generations WHERE agent=%s AND gen > "
                "(SELECT published FROM agents WHERE agent=%s) ORDER BY gen",
                (self.target.agent, self.target.agent),
            ).fetchall()
        return [self.generation_name(int(r[0])) for r in rows]

    def create(self) -> IndexStore:
        with connect(self.target.url, self.target.pool_size) as conn:
            migrate(conn, self.target.url)
            self._ensure_agent(conn)
            with conn.transaction():
                row = conn.execute(
                    "INSERT INTO generations(agent, gen, created_at) SELECT %s, "
                    "coalesce(max(gen), 0) + 1, %s FROM generations WHERE agent=%s RETURNING gen",
                    (self.target.agent, time.time(), self.target.agent),
                ).fetchone()
        assert row is not None
        return self._open(int(row[0]), readonly=False)

    def writer_saw(self, store: IndexStore) -> None:
        """After each task of the agent's writer (``store``: the published generation
        it writes): its change versions, read from the database, go on the board
        for the readers of this process."""
        board = self.board
        if board is None:
            return
        board.clear()
        if not isinstance(store, PgBase) or store.readonly or store.broken():
            return
        lock = store.writer_lock
        if not isinstance(lock, PgLock):
            return
        gen = gen_of(store.generation)
        published, versions = store.published_versions()
        if published == gen:  # else another writer published meanwhile: readers ask
            board.set(gen, versions, lock)

    def publish(self, store: IndexStore) -> None:
        if self.board is not None:
            self.board.clear()  # the readers' generation is about to change
            self.board.drop_rows()
        gen = gen_of(store.generation)
        with connect(self.target.url, self.target.pool_size) as conn:
            conn.execute("UPDATE agents SET published=%s WHERE agent=%s", (gen, self.target.agent))

    def reader_limit(self) -> int:
        """Reserve ``poolSize`` connections of this process's pool for the agent: its
        writer holds one, the generation check and a snapshot reload take up to two
        more for a moment, and searches share the rest (at least one)."""
        reserve(self.target.url, self.target.agent, self.target.pool_size)
        if self.target.read_url != self.target.url:
            reserve(self.target.read_url, self.target.agent, self.target.pool_size)
        return max(1, self.target.pool_size - 3)

    def discard(self, generation: str) -> None:
        self._drop(gen_of(generation))

    def _drop(self, gen: int) -> None:
        with connect(self.target.url, self.target.pool_size) as conn, conn.transaction():
            for table in GEN_TABLES:
                conn.execute(
                    f"DELETE FROM {table} WHERE agent=%s AND gen=%s",
                    (self.target.agent, gen),
                )
            conn.execute(
                "DELETE FROM generations WHERE agent=%s AND gen=%s", (self.target.agent, gen)
            )

    def cleanup(self) -> None:
        """Drop the generations older than the published one. A search that began on
        the old generation before the swap finished its read transaction at once."""
        with connect(self.target.url, self.target.pool_size) as conn:
            rows = conn.execute(
                "SELECT gen FROM generations WHERE agent=%s AND gen < "
                "(SELECT published FROM agents WHERE agent=%s)",
                (self.target.agent, self.target.agent),
            ).fetchall()
        for (gen,) in rows:
            self._drop(int(gen))
