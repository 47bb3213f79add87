"""One agent's index opened for both writing and reading: an ``Indexer`` and a
``Searcher`` on the same store, for one-process callers (the CLI's ``index``,
``memindex-qmd``, the benches and the tests).

The daemon does not use it: its writer thread holds an ``Indexer`` and each reader
thread a ``Searcher`` on a read-only connection. Parameters given here as Python
values are checked by the same ``api`` request types as the socket's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from indexer.api import GetRequest, GetResponse, SearchRequest, SearchResponse, StatusResponse
from indexer.config import Config
from indexer.indexing.writer import Indexer
from indexer.search.searcher import Searcher
from indexer.store import IndexStore
from indexer.store.backend import backend_for

if TYPE_CHECKING:
    from indexer.search.live import LiveIndex
    from providers.base import EmbeddingProvider

__all__ = ["MemoryIndex"]


class MemoryIndex:
    """One agent's index for a one-process caller: a ``writer`` (``Indexer``: sync,
    sync_memory, sync_sessions, embed) and a ``searcher`` (search, get, status) on
    the same store, the searcher following the writer to a rebuilt one."""

    def __init__(
        self,
        cfg: Config,
        *,
        readonly: bool = False,
        provider: EmbeddingProvider | None = None,
        provider_note: str = "",
        store: IndexStore | None = None,
        live: LiveIndex | None = None,
    ) -> None:
        backend = backend_for(cfg)
        store = store or backend.open(readonly=readonly)
        self.cfg = cfg
        self.provider = provider
        self.writer = Indexer(cfg, store, provider, changed=self._follow, backend=backend)
        self.searcher = Searcher(
            cfg, store, provider=provider, provider_note=provider_note, live=live
        )
        # The writer's tasks, as this index's own.
        self.sync = self.writer.sync
        self.sync_memory = self.writer.sync_memory
        self.sync_sessions = self.writer.sync_sessions
        self.embed = self.writer.embed

    def _follow(self, store: IndexStore) -> None:
        """After a write: search the published store, with the snapshot caught up."""
        self.searcher.store = store
        if self.searcher.live is not None:
            self.searcher.live.update(store, full=False)

    @property
    def store(self) -> IndexStore:
        """The published generation (a rebuild replaces it)."""
        return self.writer.store

    @property
    def live(self) -> LiveIndex | None:
        return self.searcher.live

    def close(self) -> None:
        self.writer.close()

    def __enter__(self) -> MemoryIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

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
        }
        return self.searcher.search(SearchRequest.parse(params))

    def get(self, path: Any, *, start: Any = None, lines: Any = None) -> GetResponse:
        return self.searcher.get(GetRequest.parse({"path": path, "from": start, "lines": lines}))

    def status(self) -> StatusResponse:
        return self.searcher.status()
