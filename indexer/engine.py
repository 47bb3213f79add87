"""Where an agent's index is put together: its backend (where the index lives), the
embedding provider by the config's policy (``provider``), and ``AgentIndex`` (a
writer and its searches: on the writer's connection for a one-process caller, the
CLI's ``index``, ``memindex-qmd update``, the benches and tests; on a pool of
read-only connections with an in-memory snapshot for the daemon, one per agent),
``reading`` (a read-only searcher for one request: the CLI's and MCP's direct path)
and ``checking`` (a store to check: ``doctor``).

No surface opens a backend, loads a provider or makes a ``Searcher`` or ``Indexer``
itself (``tests/test_layout.py``); ``AgentIndex.search`` checks its parameters with
the socket's ``api`` request types."""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from indexer.api import GetRequest, GetResponse, SearchRequest, SearchResponse, StatusResponse
from indexer.config import Config
from indexer.errors import StoreError
from indexer.store import STORE_ERRORS, IndexStore
from indexer.store.backend import backend_for

if TYPE_CHECKING:
    from indexer.indexing.transfer import TransferReport
    from indexer.indexing.writer import Indexer
    from indexer.search.recall_tally import RecallTally
    from indexer.search.searcher import Searcher
    from indexer.search.snapshot.live import LiveIndex
    from indexer.selection import SharedProviders
    from providers.auto import Selection
    from providers.base import EmbeddingProvider
    from providers.state import ProviderState

__all__ = [
    "AgentIndex",
    "checking",
    "index_location",
    "provider",
    "provider_for_reading",
    "reading",
]

_T = TypeVar("_T")

log = logging.getLogger(__name__)

_READER_WAIT = 30.0  # seconds a search waits for a free database connection


def provider(cfg: Config, shared: SharedProviders | None = None) -> Selection:
    """The embedding provider the config asks for (``shared``: a daemon's, one loaded
    model for the agents with the same settings), or None with the reasons."""
    from indexer.selection import select_provider

    return select_provider(cfg) if shared is None else shared.select(cfg)


def provider_for_reading(cfg: Config, store: IndexStore) -> tuple[EmbeddingProvider | None, str]:
    """The provider a read of ``store`` needs: loaded only when the index holds
    vectors to search (a keyword-only index costs no model load); with the note
    ``status`` shows."""
    from indexer.selection import provider_note

    if store.meta_get("vectorKey") is None:
        return None, ""
    sel = provider(cfg)
    return sel.provider, provider_note(cfg, sel)


@contextlib.contextmanager
def reading(cfg: Config, *, embed: bool) -> Iterator[Searcher]:
    """A read-only ``Searcher`` on the agent's index for one request, closed after;
    ``embed``: with the provider a search of its vectors needs."""
    backend = backend_for(cfg)
    with backend.open(readonly=True) as store:
        found, note = provider_for_reading(cfg, store) if embed else (None, "")
        from indexer.search.searcher import Searcher  # an index command never loads it

        yield Searcher(cfg, store, provider=found, provider_note=note, where=backend.where)


@contextlib.contextmanager
def checking(cfg: Config) -> Iterator[IndexStore | None]:
    """The agent's index opened read-only to check (None: not built yet)."""
    backend = backend_for(cfg)
    if not backend.exists():
        yield None
        return
    with backend.open(readonly=True) as store:
        yield store


def index_location(cfg: Config) -> tuple[str, bool]:
    """Where the agent's index lives (a path or a redacted URL) and whether it exists."""
    backend = backend_for(cfg)
    return str(backend.where), backend.exists()


class AgentIndex:
    """One agent's index: a ``writer`` (``Indexer``, holding the agent's writer lock)
    and its searches (``read``, or search, get, status): with ``readers=0`` on the
    writer's own connection (``searcher``, made on first use), with ``readers=N`` on
    pooled read-only connections (bounded on a database) sharing an in-memory
    snapshot the writer keeps caught up (a daemon's request threads).
    ``selection``: the provider ``provider(cfg, shared)`` chose, then this index's
    (logged unless ``quiet``; released or closed by ``close``); or ``provider``: one
    the caller owns (a test's, a bench's)."""

    def __init__(
        self,
        cfg: Config,
        *,
        selection: Selection | None = None,
        shared: SharedProviders | None = None,
        provider: EmbeddingProvider | None = None,
        provider_note: str = "",
        readonly: bool = False,
        store: IndexStore | None = None,
        live: LiveIndex | None = None,
        readers: int = 0,
        note: str = "",
        quiet: bool = False,
    ) -> None:
        """``note``: what the agent's writer lock says of this process (a daemon's
        socket)."""
        self.cfg = cfg
        if readers and live is None:  # pooled readers share one in-memory snapshot
            from indexer.search.snapshot.live import LiveIndex

            live = LiveIndex()
        self.live = live
        self._shared = shared
        self._owned = selection is not None and selection.provider is not None
        self.provider_state: ProviderState | None = None
        if selection is not None:
            provider, provider_note = selection.provider, self._described(selection, quiet)
        self.provider = provider
        self.provider_note = provider_note
        self._pooled: queue.LifoQueue[Searcher] = queue.LifoQueue()
        self.recalls: RecallTally | None = None  # a daemon's searches' recalls, counted
        if readers:  # (pooled readers: the agent's searches)
            from indexer.search.recall_tally import RecallTally, recalls_path

            self.recalls = RecallTally(recalls_path(cfg))
        self._single = not readers  # one searcher on the writer's store, else a pool
        self._one: Searcher | None = None  # made on first use (``searcher``)
        self._slots: threading.BoundedSemaphore | None = None
        self._idle_max = readers
        self.writer: Indexer = self._open(store, readonly, readers, note)
        self.sync = self.writer.sync  # the writer's tasks, as this index's own
        self.sync_memory = self.writer.sync_memory
        self.sync_sessions = self.writer.sync_sessions
        self.embed = self.writer.embed

    def _open(self, store: IndexStore | None, readonly: bool, readers: int, note: str) -> Indexer:
        """The agent's writer on ``store`` (else on the store its backend opens), and
        the readers' bounds; on a failure nothing is kept open. (Imported only here:
        a read, ``reading``, does not load the write path.)"""
        from indexer.indexing.writer import Indexer

        opened: IndexStore | None = None  # closed here if what follows fails
        try:
            backend = backend_for(self.cfg, note=note)  # the writer creates and migrates it
            if store is None:
                store = opened = backend.open(readonly=readonly)
            writer = self.writer = Indexer(
                self.cfg, store, self.provider, changed=self._after_write, backend=backend
            )
            if readers:  # open read-only stores (idle or in use): bounded on a database,
                # whose connections a burst of clients must not exhaust (a search waits)
                limit = backend.reader_limit()
                self._idle_max = readers if limit is None else min(readers, limit)
                self._slots = threading.BoundedSemaphore(limit) if limit is not None else None
        except BaseException:  # IndexBusy (a daemon retries): nothing kept per try
            if opened is not None:
                with contextlib.suppress(Exception):
                    opened.close()
            self._let_go()
            raise
        return writer

    def _described(self, sel: Selection, quiet: bool) -> str:
        """The selected provider's state (``status``), logged once (unless ``quiet``);
        returns the note a search shows when there is no provider."""
        from indexer.selection import provider_note, provider_state

        cfg = self.cfg
        self.provider_state = st = provider_state(cfg, sel)
        if quiet:
            return provider_note(cfg, sel)
        if st["state"] == "failed":
            log.warning(
                "%s: KEYWORD SEARCH ONLY: the %s provider failed: %s (fix: %s)",
                cfg.agent_name, st["name"], st["reason"], st["fix"],
            )  # fmt: skip
        elif sel.provider is None:
            log.info("%s: keyword search only (%s)", cfg.agent_name, sel.reason or "no provider")
        else:
            log.info("%s: embeddings by %s %s", cfg.agent_name, sel.provider.id, sel.provider.model)
        return provider_note(cfg, sel)

    def _searcher(self, store: IndexStore) -> Searcher:
        from indexer.search.searcher import Searcher  # an index command never loads it

        return Searcher(
            self.cfg,
            store,
            provider=self.provider,
            provider_note=self.provider_note,
            provider_state=self.provider_state,
            live=self.live,
            recalls=self.recalls,
            where=self.writer.backend.where,
        )

    def _after_write(self, store: IndexStore) -> None:
        """After each writer task: searches follow the published store and the
        snapshot takes in what was written (on PostgreSQL, pooled readers take the
        change versions from the writer)."""
        try:
            if not self._single:  # pooled readers: they take the writer's versions
                self.writer.backend.writer_saw(store)
        finally:
            if self._one is not None:
                self._one.store = store
                self._one.after_write()
            if self.live is not None:
                self.live.update(store, full=False)

    @property
    def searcher(self) -> Searcher | None:
        """The one searcher of a single-process index, on the writer's store (made on
        first use: an index command never loads the read path); None with pooled
        readers."""
        if self._single and self._one is None:
            self._one = self._searcher(self.writer.store)
        return self._one

    @property
    def store(self) -> IndexStore:
        """The published generation the writer writes (a rebuild replaces it)."""
        return self.writer.store

    # -- searches -------------------------------------------------------------------

    @contextlib.contextmanager
    def reader(self) -> Iterator[Searcher]:
        one = self.searcher
        if one is not None:
            yield one
            return
        backend = self.writer.backend
        current = None if backend.readers_see_publish else backend.current()
        try:
            idx = self._pooled.get_nowait()
            # a rebuild swapped generations, or the database restarted: reopen
            stale = current is not None and idx.store.generation != current
            if stale or idx.store.broken():
                self._close_reader(idx)
                self._close_idle()  # the others read the same old index: no use kept
                raise queue.Empty
        except queue.Empty:
            idx = self._open_reader()
        try:
            yield idx
        finally:
            if self._pooled.qsize() < self._idle_max and not idx.store.broken():
                self._pooled.put(idx)
            else:  # a burst of clients is over, or a lost connection: do not keep it
                self._close_reader(idx)

    def read(self, answer: Callable[[Searcher], _T]) -> _T:
        """``answer`` run with a reader; for a pooled one, again on a new connection
        if it turns out lost (an idle connection the database dropped while it
        restarted is only found out by using it). A restart loses every idle
        reader's connection at once: they are all closed, so the retry (and the
        requests after it) get new ones instead of the next dead one."""
        with self.reader() as searcher:
            try:
                return answer(searcher)
            except STORE_ERRORS:
                if self._single or not searcher.store.broken():
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
            return self._searcher(self.writer.backend.open(readonly=True))
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
                self._close_reader(self._pooled.get_nowait())
            except queue.Empty:
                break

    def search(
        self,
        query: Any,
        *,
        max_results: Any = None,
        min_score: Any = None,
        sources: Any = None,
        gate: Any = None,
        mode: Any = None,
        explain: Any = None,
        abstain: Any = None,
        as_of: Any = None,
        time_zone: Any = None,
        stages: Any = None,
    ) -> SearchResponse:
        params = {
            "query": query,
            "maxResults": max_results,
            "minScore": min_score,
            "sources": sources,
            "gate": gate,
            "mode": mode,
            "explain": explain,
            "abstain": abstain,
            "asOf": as_of,
            "timeZone": time_zone,
            "stages": stages,
        }
        req = SearchRequest.parse(params)
        return self.read(lambda s: s.search(req))

    def get(self, path: Any, *, start: Any = None, lines: Any = None) -> GetResponse:
        req = GetRequest.parse({"path": path, "from": start, "lines": lines})
        return self.read(lambda s: s.get(req))

    def status(self) -> StatusResponse:
        return self.read(lambda s: s.status())

    def close(self) -> None:
        if self.recalls is not None:
            self.recalls.flush()
        self._close_idle()
        try:
            self.writer.close()
        finally:
            self._let_go()

    def _let_go(self) -> None:
        """Release a provider this index selected, once (a daemon's reload may close
        an agent twice)."""
        if not self._owned:
            return
        self._owned = False
        if self._shared is not None:
            self._shared.release(self.provider)
        elif self.provider is not None:
            self.provider.close()

    def __enter__(self) -> AgentIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def migrate(
    cfg: Config,
    url: str,
    *,
    replace: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> TransferReport:
    """``memindex migrate``: the agent's SQLite index copied into the PostgreSQL
    database at ``url`` (``indexing.transfer.migrate_agent``)."""
    from indexer.indexing.transfer import migrate_agent
    from indexer.store.backend import SqliteBackend
    from indexer.store.postgres.backend import PostgresBackend

    source = SqliteBackend(cfg.resolved_index_path())
    dest = PostgresBackend(url, cfg.agent_name, pool_size=cfg.store.poolSize)
    return migrate_agent(cfg, source, dest, replace=replace, progress=progress)
