"""One agent inside the daemon: its writer, its readers and its health."""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, TypeVar

from indexer.api import ReindexResponse
from indexer.config import Config
from indexer.errors import StoreError
from indexer.indexing.progress import WorkProgress
from indexer.indexing.writer import Indexer
from indexer.search.live import LiveIndex
from indexer.search.searcher import Searcher
from indexer.selection import SharedProviders, provider_note, provider_state, select_provider
from indexer.store import STORE_ERRORS, IndexStore
from indexer.store.backend import backend_for
from indexer.surfaces.health import HealthReport, TaskHealth

if TYPE_CHECKING:
    from providers.auto import Selection

__all__ = ["AgentRuntime"]

_T = TypeVar("_T")

log = logging.getLogger(__name__)

_IDLE_READERS = 8  # read-only connections kept open per agent between requests
_READER_WAIT = 30.0  # seconds a search waits for a free database connection


class AgentRuntime:
    """One agent: its ``Indexer`` (the indexer thread's only) and a pool of
    ``Searcher``s on read-only connections (the request threads')."""

    def __init__(
        self, cfg: Config, *, note: str = "", providers: SharedProviders | None = None
    ) -> None:
        """``note``: what the agent's writer lock says of this process (its socket);
        ``providers``: the daemon's, shared by its agents (else this agent's own)."""
        self.cfg = cfg
        self.note = note
        self._providers = providers
        self._released = False
        sel = select_provider(cfg) if providers is None else providers.select(cfg)
        self.provider = sel.provider
        try:
            self._start(cfg, note, sel)
        except BaseException:  # IndexBusy (retried by the daemon): nothing kept per try
            writer = getattr(self, "writer", None)
            if writer is not None:
                with contextlib.suppress(Exception):
                    writer.store.close()
            self._let_go()
            raise
        self.rebuild_queued = False  # a forced rebuild of a damaged index is queued
        self.backfill = True  # first pass: everything, transcripts below thresholds too
        self.memory_due: float | None = None
        self.memory_first: float | None = None
        self.sessions_due: float | None = None
        self.transcript_tails = 0  # the last sessions pass's uncommitted (searchable) tails
        self.sessions_all = False  # the next session sync reads every delta (a backfill's rest)
        self.sessions_more = False  # a transcript is being read in slices: more to come
        self.embed_due: float | None = None  # open batch jobs: poll them then
        self.embed_poll = 0.5
        self.next_rescan: float | None = None  # the daemon's next sync with no event
        self.lock_check: float = 0.0  # when the writer lock is next checked (monotonic)
        self.last_report: ReindexResponse | None = None
        self.health = TaskHealth()
        self.progress = WorkProgress()  # the writer's files and embedding backlog

    def _start(self, cfg: Config, note: str, sel: Selection) -> None:
        """The provider's state, the writer (holding the agent's writer lock) and
        the readers' bounds."""
        self.provider_note = provider_note(cfg, sel)
        self.provider_state = provider_state(cfg, sel)
        if self.provider_state["state"] == "failed":
            st = self.provider_state
            log.warning(
                "%s: KEYWORD SEARCH ONLY: the %s provider failed: %s (fix: %s)",
                cfg.agent_name, st["name"], st["reason"], st["fix"],
            )  # fmt: skip
        elif sel.provider is None:
            log.info("%s: keyword search only (%s)", cfg.agent_name, sel.reason or "no provider")
        else:
            log.info("%s: embeddings by %s %s", cfg.agent_name, sel.provider.id, sel.provider.model)
        self.live = LiveIndex()  # shared by the readers, caught up by the writer
        # the writer creates and migrates the index file
        backend = backend_for(cfg, note=note)
        self.writer = Indexer(
            cfg, backend.open(), sel.provider, changed=self._caught_up, backend=backend
        )
        self._readers: queue.LifoQueue[Searcher] = queue.LifoQueue()
        # Open read-only stores (idle or in use): bounded on a database, whose
        # connections a burst of clients must not exhaust (a search waits instead).
        limit = backend.reader_limit()
        self._idle_max = _IDLE_READERS if limit is None else min(_IDLE_READERS, limit)
        self._slots = threading.BoundedSemaphore(limit) if limit is not None else None

    def _caught_up(self, store: IndexStore) -> None:
        """After each writer task: the readers' snapshot takes in what it wrote (and
        on PostgreSQL, the readers take its change versions from the writer)."""
        try:
            self.writer.backend.writer_saw(store)
        finally:
            self.live.update(store, full=False)

    def report_health(self) -> HealthReport:
        pending = (
            self.backfill
            or self.memory_due is not None
            or self.sessions_due is not None
            or self.sessions_more
        )
        report = self.health.report(pending)
        report["progress"] = self.progress.state()
        if self.transcript_tails:
            report["transcriptTails"] = self.transcript_tails
        return report

    @contextlib.contextmanager
    def reader(self) -> Iterator[Searcher]:
        backend = self.writer.backend
        current = None if backend.readers_see_publish else backend.current()
        try:
            idx = self._readers.get_nowait()
            # a rebuild swapped generations, or the database restarted: reopen
            stale = current is not None and idx.store.generation != current
            if stale or idx.store.broken():
                self._close_reader(idx)
                raise queue.Empty
        except queue.Empty:
            idx = self._open_reader()
        try:
            yield idx
        finally:
            if self._readers.qsize() < self._idle_max and not idx.store.broken():
                self._readers.put(idx)
            else:  # a burst of clients is over, or a lost connection: do not keep it
                self._close_reader(idx)

    def read(self, answer: Callable[[Searcher], _T]) -> _T:
        """``answer`` run with a reader; again on a new connection if the reader's
        turns out lost (an idle connection the database dropped while it restarted
        is only found out by using it). A restart loses every idle reader's
        connection at once: they are all closed, so the retry (and the requests
        after it) get new ones instead of the next dead one."""
        with self.reader() as searcher:
            try:
                return answer(searcher)
            except STORE_ERRORS:
                if not searcher.store.broken():
                    raise
        self._close_idle()
        with self.reader() as searcher:  # the lost one was closed, not pooled again
            return answer(searcher)

    def _open_reader(self) -> Searcher:
        if self._slots is not None and not self._slots.acquire(timeout=_READER_WAIT):
            raise StoreError(
                f"all {self.cfg.store.poolSize} connections to the database are busy "
                f"(raise [store] poolSize): {self.writer.backend.where}"
            )
        try:
            return Searcher(
                self.cfg,
                self.writer.backend.open(readonly=True),
                provider=self.provider,
                provider_note=self.provider_note,
                provider_state=self.provider_state,
                live=self.live,
            )
        except BaseException:
            if self._slots is not None:
                self._slots.release()
            raise

    def _close_reader(self, idx: Searcher) -> None:
        try:
            idx.store.close()
        finally:
            if self._slots is not None:
                self._slots.release()

    def _close_idle(self) -> None:
        while True:
            try:
                self._close_reader(self._readers.get_nowait())
            except queue.Empty:
                break

    def close(self) -> None:
        self._close_idle()
        try:
            self.writer.store.close()
        finally:
            self._let_go()

    def _let_go(self) -> None:
        """Release the provider, once (a reload may close a runtime twice)."""
        if self._released:
            return
        self._released = True
        if self._providers is not None:
            self._providers.release(self.provider)
        elif self.provider is not None:
            self.provider.close()
