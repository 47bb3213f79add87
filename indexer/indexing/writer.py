"""The write path: ``Indexer`` keeps one agent's index in step with its files.

Memory files (``pipeline.sync``), then transcript deltas (``session_sync``), then
vectors for chunks that have none (``embedding.embed_pending``). When the chunking,
the embedding model or ``force`` call for a rebuild (``pipeline.rebuild_reason``),
the index is built into a new generation while the published one keeps answering,
then swapped in atomically (the store's ``Backend``).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from indexer.config import Config
from indexer.errors import MemindexError, index_damaged
from indexer.indexing.pipeline import SyncReport, rebuild_reason, sync
from indexer.indexing.progress import WorkProgress
from indexer.indexing.transcripts.session_files import TranscriptFiles
from indexer.indexing.transcripts.session_sync import Quiet, SessionReport, sync_sessions
from indexer.indexing.transcripts.source import indexed_from
from indexer.store import STORE_ERRORS, IndexStore
from indexer.store.backend import Backend
from indexer.store.records import FORGOTTEN

if TYPE_CHECKING:
    from indexer.indexing.embedding import EmbedReport
    from providers.base import EmbeddingProvider

__all__ = ["Indexer"]

log = logging.getLogger(__name__)


class _Abandon(Exception):
    """A rebuild stopped before it finished: the new generation is discarded."""


_TASK_ERRORS: tuple[type[BaseException], ...] = (*STORE_ERRORS, MemindexError)
CHANGES_KEPT = 200_000  # change feed entries kept for snapshots catching up (live.py)


class Indexer:
    """The one writer of an agent's index. ``store`` is the published generation (a
    rebuild replaces it). ``changed`` is called with it after every task that may
    have written (a sync, an embedding pass, a rebuild's publication)."""

    def __init__(
        self,
        cfg: Config,
        store: IndexStore,
        provider: EmbeddingProvider | None = None,
        changed: Callable[[IndexStore], None] | None = None,
        *,
        backend: Backend,
    ) -> None:
        self.cfg = cfg
        self.backend = backend  # made by the composition root (engine.AgentIndex)
        self.store = store
        self.provider = provider
        self.changed = changed
        self.quiet = Quiet()  # when the transcripts last changed, as this writer saw it
        # transcripts an error left where they were: path -> reason, until a sync
        # indexes them or they are gone (the daemon's status shows them)
        self.left_behind: dict[str, str] = {}

    def sync(
        self,
        *,
        force: bool = False,
        progress: WorkProgress | None = None,
        should_stop: Callable[[], bool] | None = None,
        embed: bool = True,
        sessions_budget_s: float | None = None,
    ) -> SyncReport:
        """Memory files, then every transcript delta (a full backfill), then vectors.
        ``sessions_budget_s``: stop reading transcripts after so long (the report's
        ``sessions.more`` says work is left; ``sync_sessions`` goes on)."""
        with self._task():
            return self._sync(
                force=force,
                progress=progress,
                should_stop=should_stop,
                embed=embed,
                sessions_budget_s=sessions_budget_s,
            )

    @contextlib.contextmanager
    def _task(self) -> Iterator[None]:
        """A write task: on a store whose connection is alive (``_reconnect``);
        afterwards (whatever happened) the change feed is pruned and ``changed``
        told."""
        if self.store.broken():
            self._reconnect()
        else:
            self.keep_lock()
        try:
            yield
        finally:
            try:
                if not self.store.readonly:
                    self.store.upkeep(CHANGES_KEPT)
                if self.changed is not None:
                    self.changed(self.store)
            except _TASK_ERRORS as exc:
                log.warning("after a write task on %s: %s", self.backend.where, exc)

    def keep_lock(self) -> bool:
        """Take the agent's writer lock back if it was lost (a database restart ended
        its session; the state folder was cleared). True if it had to; IndexBusy if
        another writer took it meanwhile, StoreError while the database is away."""
        lock = self.store.writer_lock
        if lock is None or not lock.lost():
            return False
        lock.retake()
        log.warning("%s: took the writer lock back", self.backend.where)
        return True

    def close(self) -> None:
        """Close the store, releasing the writer lock."""
        self.store.close()

    def _reconnect(self) -> None:
        """The store is ``broken()``: its database server restarted or failed over
        (open the published generation again, which takes the writer lock again), or
        its file was deleted or replaced (open what the path holds now, or a new
        index). While the server is still away this raises StoreError, the task
        fails (``status`` says so) and the daemon retries it; the files changed
        meanwhile are found by that sync, as after any failed one."""
        log.warning(
            "%s: its connection was lost or its file removed: opening it again", self.backend.where
        )
        lock, self.store.writer_lock = self.store.writer_lock, None  # kept across the reopen
        with contextlib.suppress(*STORE_ERRORS):
            self.store.close()
        try:
            self.store = self.backend.open(lock=lock)
        except BaseException:
            self.store.writer_lock = lock  # released with the store when closed
            raise

    def _sync(
        self,
        *,
        force: bool,
        progress: WorkProgress | None,
        should_stop: Callable[[], bool] | None,
        embed: bool,
        sessions_budget_s: float | None = None,
    ) -> SyncReport:
        t0 = time.monotonic()
        key = self.provider.key() if self.provider else None
        reason = rebuild_reason(self.store, self.cfg, force=force, provider_key=key)
        if reason is not None:
            with self.backend.rebuild_lock():  # one rebuild per index at a time
                rebuilt = self._rebuild(reason, progress, should_stop, embed)
            rebuilt.seconds = round(time.monotonic() - t0, 3)  # the whole rebuild
            return rebuilt
        files = progress.files if progress else None
        report = sync(self.store, self.cfg, force=force, progress=files, should_stop=should_stop)
        if not report.stopped:
            report.sessions = self._noted(
                sync_sessions(
                    self.store,
                    self.cfg,
                    should_stop=should_stop,
                    quiet=self.quiet,
                    budget_s=sessions_budget_s,
                )
            ).to_json()
        if embed and not report.stopped:
            done = self._embed(should_stop, wait=True, progress=progress)  # in sync's task
            report.embedding = None if done is None else dict(done.__dict__)
        report.seconds = round(time.monotonic() - t0, 3)
        return report

    def _rebuild(
        self,
        reason: str,
        progress: WorkProgress | None,
        should_stop: Callable[[], bool] | None,
        embed: bool,
    ) -> SyncReport:
        backend = self.backend
        log.info("rebuilding %s into a new generation: %s", backend.where, reason)
        # A killed rebuild's generation goes before the new one is made (its vectors
        # and batch jobs kept in the current one, keyed by model), so a kill at any
        # point leaves at most one abandoned generation.
        for old_gen in backend.abandoned():
            with contextlib.suppress(*STORE_ERRORS):
                self.store.copy_carryover(old_gen)
            backend.discard(old_gen)
        dropped = _gone_folder_transcripts(self.store, self.cfg)
        fresh = backend.create()
        try:
            self._carry_over(fresh)
            builder = Indexer(self.cfg, fresh, self.provider, backend=backend)
            # Vectors too, whatever the caller asked: a generation is published
            # complete, so searches keep the old one (and its vectors) until then.
            report = builder.sync(
                progress=progress, should_stop=should_stop, embed=embed or self.provider is not None
            )
            if report.stopped:  # interrupted: the current generation stays as it is
                raise _Abandon
            backend.publish(fresh)
        except BaseException as exc:
            generation = fresh.generation
            fresh.close()
            backend.discard(generation)
            if isinstance(exc, _Abandon):
                return report
            raise
        old, self.store = self.store, fresh
        self.left_behind = builder.left_behind  # the new generation's
        fresh.writer_lock, old.writer_lock = old.writer_lock, None  # the writer keeps it
        old.close()
        backend.cleanup()
        report.rebuilt = reason
        if dropped is not None:  # what the new generation could not read again: said
            log.warning("%s: %s", backend.where, dropped["reason"])
            report.errors.append(dropped)
        return report

    def _carry_over(self, fresh: IndexStore) -> None:
        """What the new generation ``fresh`` cannot read again from the files: the
        embedding cache and batch jobs, the note status shows of a recovery, the
        sessions forgotten (a restored database must not bring one back)."""
        try:
            fresh.copy_carryover(self.store.generation)
            with fresh.transaction():
                for key in ("recovered", FORGOTTEN):
                    value = self.store.meta_get(key)
                    if value:
                        fresh.meta_set(key, value)
        except STORE_ERRORS as exc:
            if not index_damaged(exc):
                raise
            # A damaged generation: rebuild without its cache (vectors are made
            # again) rather than not at all.
            log.warning("not keeping the embedding cache of a damaged index: %s", exc)

    def sync_memory(self, *, should_stop: Callable[[], bool] | None = None) -> SyncReport:
        """Memory files only (what the watcher triggers)."""
        with self._task():
            return sync(self.store, self.cfg, should_stop=should_stop)

    def sync_sessions(
        self,
        *,
        due_only: bool,
        should_stop: Callable[[], bool] | None = None,
        budget_s: float | None = None,
    ) -> SessionReport:
        """Transcript deltas (``due_only``: those large or quiet enough), for at most
        ``budget_s`` seconds (the report's ``more``: call again)."""
        with self._task():
            return self._noted(
                sync_sessions(
                    self.store,
                    self.cfg,
                    due_only=due_only,
                    should_stop=should_stop,
                    quiet=self.quiet,
                    budget_s=budget_s,
                )
            )

    def _noted(self, rep: SessionReport) -> SessionReport:
        """``left_behind`` after ``rep``: what it indexed or found gone is no longer
        left behind, what failed is (a transcript it did not look at stays as it was)."""
        for path in rep.cleared:
            self.left_behind.pop(path, None)
        self.left_behind.update((e["path"], e["reason"]) for e in rep.failed)
        return rep

    def embed(
        self,
        *,
        should_stop: Callable[[], bool] | None = None,
        wait: bool = True,
        progress: WorkProgress | None = None,
    ) -> EmbedReport | None:
        """Vectors for chunks that have none (no-op without a provider). With batch
        jobs on, ``wait`` polls them until done (the CLI); the daemon polls later."""
        if self.provider is None:
            return None
        with self._task():
            return self._embed(should_stop, wait=wait, progress=progress)

    def _embed(
        self,
        should_stop: Callable[[], bool] | None,
        *,
        wait: bool,
        progress: WorkProgress | None = None,
    ) -> EmbedReport | None:
        if self.provider is None:
            return None
        from indexer.indexing.embedding import embed_pending

        remote = self.cfg.provider.remote
        rep = embed_pending(
            self.store,
            self.provider,
            max_cache_entries=self.cfg.cache.maxEntries,
            should_stop=should_stop,
            use_batch=remote.batch,
            wait=wait,
            batch_timeout=remote.batchTimeoutMs / 1000,
            progress=progress,
        )
        return rep


def _gone_folder_transcripts(store: IndexStore, cfg: Config) -> dict[str, str] | None:
    """Before a rebuild: the sessions folder is gone (or no folder) while transcripts
    indexed from it are kept (``status`` says so); a new generation cannot read them
    again, so the rebuild drops them, and says how many (None: nothing is dropped)."""
    folder = cfg.sessions_dir()
    if folder is None or folder.is_dir():
        return None
    n = indexed_from(store, TranscriptFiles())
    if not n:
        return None
    return {
        "path": str(folder),
        "reason": f"sessions folder {folder} is not there: the rebuild dropped the {n} "
        "transcript(s) indexed from it (bring the folder back and index again to have them)",
    }
