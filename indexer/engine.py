"""Where an agent's index is put together for a process without a daemon: its
backend (where the index lives), the embedding provider by the config's policy
(``provider``), and either a writer and a searcher on one store (``MemoryIndex``:
the CLI's ``index``, ``memindex-qmd update``, the benches and the tests) or a
read-only searcher for one request (``reading``: the CLI's and MCP's direct path,
``memindex-qmd`` searches) or a store to check (``checking``: ``doctor``). The
surfaces ask here instead of opening a backend or loading a provider themselves
(``tests/test_layout.py``); the daemon's per-agent root is still its own
(``surfaces/agent.AgentRuntime``, to be folded in next).

Parameters given to ``MemoryIndex`` as Python values are checked by the same
``api`` request types as the socket's.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from indexer.api import GetRequest, GetResponse, SearchRequest, SearchResponse, StatusResponse
from indexer.config import Config
from indexer.search.searcher import Searcher
from indexer.store import IndexStore
from indexer.store.backend import backend_for

if TYPE_CHECKING:
    from indexer.indexing.writer import Indexer
    from indexer.search.live import LiveIndex
    from indexer.selection import SharedProviders
    from providers.auto import Selection
    from providers.base import EmbeddingProvider

__all__ = [
    "MemoryIndex",
    "checking",
    "index_location",
    "provider",
    "provider_for_reading",
    "reading",
]


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
    with backend_for(cfg).open(readonly=True) as store:
        found, note = provider_for_reading(cfg, store) if embed else (None, "")
        yield Searcher(cfg, store, provider=found, provider_note=note)


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
        # Imported only here: a read (``reading``) does not load the write path.
        from indexer.indexing.writer import Indexer

        self.writer: Indexer = Indexer(cfg, store, provider, changed=self._follow, backend=backend)
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
        self.searcher.after_write()
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
