"""Where an agent's index lives, and its generations: the ``Backend`` protocol.

A backend opens the published generation of one agent's index (``open``; for
writing, with the agent's one-writer lock, ``writer_lock``) and runs
the rebuild cycle the writer drives: make an unpublished generation (``create``),
fill it while the published one keeps answering, then ``publish`` it in one atomic
step, or ``discard`` it. A generation is named by a string (``IndexStore.generation``)
that readers compare to ``current()`` to notice a swap.

``SqliteBackend``: one file per agent, generations as files behind a symlink
(``generations``). The PostgreSQL backend (``store.postgres``) keeps generations as a
column of every row and publishes by updating one row. ``backend_for`` picks one
from the configuration: ``[store] url`` (or ``MEMINDEX_DATABASE_URL``) names a
PostgreSQL database; otherwise the SQLite file at ``indexPath``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from indexer.errors import IndexCorrupt
from indexer.store.base import IndexStore
from indexer.store.sqlite import generations
from indexer.store.writer_lock import FileLock, WriterLock, holder_label

if TYPE_CHECKING:
    from indexer.config import Config

__all__ = ["Backend", "SqliteBackend", "backend_for", "database_url"]

log = logging.getLogger(__name__)


class Backend(Protocol):
    kind: str  # "sqlite" | "postgresql"
    where: str  # for messages: the index file, or the database and agent
    # A reader's change_versions() notices a newer published generation itself (its
    # store turns broken()), so a reader need not ask current() before each request.
    readers_see_publish: bool

    def exists(self) -> bool: ...
    def open(self, *, readonly: bool = False, lock: WriterLock | None = None) -> IndexStore:
        """The published generation. For writing (not ``readonly``) the store holds the
        agent's writer lock: ``lock`` if given (a writer reopening its index keeps its
        lock; taken again if it was lost), else a new one; IndexBusy if another
        process holds it."""
        ...

    def current(self) -> str:
        """The published generation's name."""
        ...

    def rebuild_lock(self) -> AbstractContextManager[None]: ...
    def abandoned(self) -> list[str]:
        """Generations made by rebuilds that never published."""
        ...

    def create(self) -> IndexStore:
        """A new, empty, unpublished generation, open for writing."""
        ...

    def publish(self, store: IndexStore) -> None: ...
    def writer_saw(self, store: IndexStore) -> None:
        """Told after each task of the agent's writer in this process (``store``: the
        published generation it writes); the PostgreSQL backend hands its change
        versions to the readers here instead of their asking the database."""
        ...

    def reader_limit(self) -> int | None:
        """How many read-only stores may be open at once (None: no limit). The
        daemon calls it once per agent: a database reserves its connections."""
        ...

    def discard(self, generation: str) -> None: ...
    def cleanup(self) -> None:
        """Remove replaced generations no reader should still need."""
        ...


def database_url(cfg: Config) -> str:
    """The PostgreSQL URL the configuration names, or "" for SQLite."""
    return cfg.database_url()


def backend_for(cfg: Config, *, note: str = "") -> Backend:
    """The configured backend. ``note`` adds to what a writer's lock says of it
    (the daemon: its socket)."""
    label = holder_label(f"workspace {cfg.workspace}" + (f", {note}" if note else ""))
    url = database_url(cfg)
    if url:
        from indexer.store.postgres.backend import PostgresBackend

        return PostgresBackend.for_config(cfg, url, label=label)
    return SqliteBackend(cfg.resolved_index_path(), label=label, legacy=cfg.legacy_index_path())


class SqliteBackend:
    kind = "sqlite"
    readers_see_publish = False  # current() is a readlink: asked per request

    def __init__(self, index_path: Path, *, label: str = "", legacy: Path | None = None) -> None:
        self.index_path = index_path
        self.where = str(index_path)
        self.label = label or holder_label()
        self.legacy = legacy  # an older name of this index, taken over when found

    def exists(self) -> bool:
        return self.index_path.exists() or (self.legacy is not None and self.legacy.exists())

    def _adopt_legacy(self) -> None:
        """Rename an index kept under its older name (its embedding cache is worth
        keeping). A link is renamed as it is (it points at a generation beside it);
        a plain file takes its -wal/-shm with it."""
        old = self.legacy
        if old is None or os.path.lexists(self.index_path) or not os.path.lexists(old):
            return
        with contextlib.suppress(OSError):
            if not old.is_symlink():
                for suffix in ("-wal", "-shm"):
                    if os.path.exists(f"{old}{suffix}"):
                        os.replace(f"{old}{suffix}", f"{self.index_path}{suffix}")
            os.replace(old, self.index_path)
            log.info("index %s is now %s", old, self.index_path)

    def open(self, *, readonly: bool = False, lock: WriterLock | None = None) -> IndexStore:
        """The published generation. A writer that finds it damaged (not a SQLite
        database, cut short, a broken schema) sets it aside and starts a new index:
        everything in it is derived from the user's files, and a daemon refusing to
        start over it would stop indexing for good. The damaged file is kept, and
        the new index says where (``status`` ``recovered``)."""
        from indexer.store.sqlite.store import Store

        if readonly:
            if self.legacy is not None and not os.path.lexists(self.index_path):
                return Store(self.legacy, readonly=True)  # taken over by the next writer
            return Store(self.index_path, readonly=True)
        held = lock
        if lock is None:
            lock = FileLock(self.index_path, self.label)
        elif lock.lost():
            lock.retake()
        try:
            self._adopt_legacy()
            store = self._open_writer()
        except BaseException:
            if held is None:
                lock.release()
            raise
        store.writer_lock = lock
        return store

    def _open_writer(self) -> IndexStore:
        from indexer.store.sqlite.store import Store

        try:
            return Store(self.index_path)
        except IndexCorrupt as exc:
            with generations.rebuild_lock(self.index_path):
                try:  # another writer may have replaced it meanwhile
                    return Store(self.index_path)
                except IndexCorrupt:
                    kept = generations.set_aside(self.index_path)
            reason = str(exc.__cause__ or exc)
            log.warning(
                "index %s was damaged (%s): kept it as %s and started a new one",
                self.index_path, reason, kept,
            )  # fmt: skip
            store = Store(self.index_path)
            note = {"at": time.time(), "reason": reason, "keptAs": str(kept)}
            store.meta_set("recovered", json.dumps(note))
            return store

    def current(self) -> str:
        return str(generations.current_file(self.index_path))

    @contextmanager
    def rebuild_lock(self) -> Iterator[None]:
        with generations.rebuild_lock(self.index_path):
            yield

    def abandoned(self) -> list[str]:
        return [str(g) for g in generations.abandoned(self.index_path)]

    def create(self) -> IndexStore:
        from indexer.store.sqlite.store import Store

        return Store(generations.new_generation(self.index_path))

    def writer_saw(self, store: IndexStore) -> None:
        """Nothing: a SQLite reader reads the versions from its file in microseconds."""

    def publish(self, store: IndexStore) -> None:
        store.checkpoint()
        generations.publish(self.index_path, Path(store.generation))

    def reader_limit(self) -> int | None:
        return None  # files: no connection to run out of

    def discard(self, generation: str) -> None:
        generations.remove_generation(Path(generation))

    def cleanup(self) -> None:
        generations.cleanup(self.index_path)
