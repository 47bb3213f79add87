"""Reading an agent's index the fastest way available: through the running daemon
when it serves this index (warm, current), else from the index file directly. Used by
the CLI and the MCP server, so both answer exactly like the socket does."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from indexer import api
from indexer.config import Config
from indexer.errors import MemindexError
from indexer.surfaces.client import DaemonUnavailable, call, serves

if TYPE_CHECKING:
    from providers.base import EmbeddingProvider

__all__ = ["daemon_socket", "provider_for_reading", "read_call"]


def daemon_socket(cfg: Config) -> Path | None:
    """The daemon's socket, if a daemon serves this agent's index; else None."""
    path = cfg.socket_path()
    return path if serves(path, cfg.agent_name, cfg.index_location()) else None


def read_call(
    cfg: Config,
    method: str,
    params: dict[str, Any],
    direct: Callable[[], None] | None = None,
) -> Any:
    """Ask the daemon when it serves this index, else answer the read method
    ``method`` (``api.METHODS``) from the index file directly (calling ``direct``
    first: the CLI sets up its logging only then)."""
    sock = daemon_socket(cfg)
    if sock is not None:
        try:
            return call(sock, method, {"agent": cfg.agent_name, **params})
        except DaemonUnavailable:
            pass  # it went away: read the file
    req = api.parse(method, params)  # a bad parameter fails before any file is opened
    if direct is not None:
        direct()
    # Imported only now: the read path pulls in numpy, the tokenizer and sqlite-vec,
    # which a call answered by the daemon does not need.
    from indexer.search.searcher import Searcher
    from indexer.store.backend import backend_for

    backend = backend_for(cfg)
    if isinstance(req, api.StatusRequest) and not backend.exists():
        from indexer.search.searcher import status_before_indexing

        return status_before_indexing(cfg, backend.where)  # a state, not an error
    provider, note = None, ""
    if isinstance(req, (api.SearchRequest, api.StatusRequest)):  # memory_get needs none
        provider, note = provider_for_reading(cfg)
    with backend.open(readonly=True) as store:
        return Searcher(cfg, store, provider=provider, provider_note=note).answer(req)


def provider_for_reading(cfg: Config) -> tuple[EmbeddingProvider | None, str]:
    """Load the embedding model only when the index holds vectors to search."""
    from indexer.selection import provider_note, select_provider
    from indexer.store.backend import backend_for

    try:
        with backend_for(cfg).open(readonly=True) as store:
            has_vectors = store.meta_get("vectorKey") is not None
    except MemindexError:
        return None, ""
    if not has_vectors:
        return None, ""
    sel = select_provider(cfg)
    return sel.provider, provider_note(cfg, sel)
