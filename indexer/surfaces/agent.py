"""One agent inside the daemon: its writer, its readers and its health."""

from __future__ import annotations

import contextlib
import logging
import queue
from collections.abc import Iterator
from typing import Any

from indexer.config import Config
from indexer.indexing.writer import Indexer
from indexer.search.live import LiveIndex
from indexer.search.searcher import Searcher
from indexer.selection import provider_note, select_provider
from indexer.store import IndexStore
from indexer.store.backend import backend_for
from indexer.surfaces.health import TaskHealth

__all__ = ["AgentRuntime"]

log = logging.getLogger(__name__)

_IDLE_READERS = 8  # read-only connections kept open per agent between requests


class AgentRuntime:
    """One agent: its ``Indexer`` (the indexer thread's only) and a pool of
    ``Searcher``s on read-only connections (the request threads')."""

    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        sel = select_provider(cfg)
        self.provider = sel.provider
        self.provider_note = provider_note(cfg, sel)
        if sel.provider is None:
            log.info("%s: keyword search only (%s)", cfg.agent_name, sel.reason or "no provider")
        else:
            log.info("%s: embeddings by %s %s", cfg.agent_name, sel.provider.id, sel.provider.model)
        self.live = LiveIndex()  # shared by the readers, caught up by the writer
        # the writer creates and migrates the index file
        backend = backend_for(cfg)
        self.writer = Indexer(
            cfg, backend.open(), sel.provider, changed=self._caught_up, backend=backend
        )
        self._readers: queue.LifoQueue[Searcher] = queue.LifoQueue()
        self.backfill = True  # first pass: everything, transcripts below thresholds too
        self.memory_due: float | None = None
        self.memory_first: float | None = None
        self.sessions_due: float | None = None
        self.embed_due: float | None = None  # open batch jobs: poll them then
        self.embed_poll = 0.5
        self.last_report: dict[str, Any] | None = None
        self.health = TaskHealth()

    def _caught_up(self, store: IndexStore) -> None:
        """After each writer task: the readers' snapshot takes in what it wrote."""
        self.live.update(store, full=False)

    def report_health(self) -> dict[str, Any]:
        pending = self.backfill or self.memory_due is not None or self.sessions_due is not None
        return self.health.report(pending)

    @contextlib.contextmanager
    def reader(self) -> Iterator[Searcher]:
        current = self.writer.backend.current()
        try:
            idx = self._readers.get_nowait()
            if idx.store.generation != current:  # a rebuild swapped generations: reopen
                idx.store.close()
                raise queue.Empty
        except queue.Empty:
            idx = Searcher(
                self.cfg,
                self.writer.backend.open(readonly=True),
                provider=self.provider,
                provider_note=self.provider_note,
                live=self.live,
            )
        try:
            yield idx
        finally:
            if self._readers.qsize() < _IDLE_READERS:
                self._readers.put(idx)
            else:  # a burst of clients is over: do not keep its connections
                idx.store.close()

    def close(self) -> None:
        while True:
            try:
                self._readers.get_nowait().store.close()
            except queue.Empty:
                break
        self.writer.store.close()
        if self.provider is not None:
            self.provider.close()
