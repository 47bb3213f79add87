"""Reading an agent's index the fastest way available: through the running daemon
when it serves this index (warm, current), else from the index file directly. Used by
the CLI and the MCP server, so both answer exactly like the socket does."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from indexer import api
from indexer.config import Config
from indexer.errors import InvalidParams, StoreError, UnknownMethod
from indexer.surfaces.client import DaemonUnavailable, call, serves

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from indexer.indexing.progress import WorkProgress
    from indexer.search.searcher import Searcher

__all__ = ["FileService", "daemon_socket", "read_call"]

_T = TypeVar("_T")


def daemon_socket(cfg: Config) -> Path | None:
    """The daemon's socket, if a daemon serves this agent's index; else None."""
    path = cfg.socket_path()
    return path if serves(path, cfg.agent_name, cfg.index_location(), cfg.workspace) else None


def read_call(
    cfg: Config,
    method: str,
    params: Mapping[str, object],
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
    api.parse(method, params)  # a bad parameter fails before any file is opened
    if direct is not None:
        direct()
    return api.dispatch(FileService(cfg), method, params)


class FileService:
    """The ``MemoryService`` of the direct path, with no daemon: the read methods
    answered from the agent's index file (or database) and its files, ``reindex`` by
    syncing in this process; ``ping`` and ``qmd_search`` need a daemon."""

    def __init__(self, cfg: Config, progress: WorkProgress | None = None) -> None:
        """``progress``: what a ``reindex`` reports as it goes (the CLI's bar)."""
        self.cfg = cfg
        self.progress = progress

    def _check_agent(self, agent: str | None) -> None:
        if agent is not None and agent != self.cfg.agent_name:
            raise InvalidParams(f"this reads agent '{self.cfg.agent_name}', not '{agent}'")

    def _searcher(self, agent: str | None, *, provider: bool) -> AbstractContextManager[Searcher]:
        self._check_agent(agent)
        # Imported only now: the read path pulls in numpy, the tokenizer and
        # sqlite-vec, which a call answered by the daemon does not need.
        from indexer.engine import reading

        return reading(self.cfg, embed=provider)

    def read(self, agent: str | None, answer: Callable[[api.Reader], _T], *, embed: bool) -> _T:
        """``answer`` with a read-only searcher on the index, for this request; the
        embedding model is loaded only when ``embed`` and the index holds vectors.
        Before the first ``memindex index``, a reader of the files themselves:
        ``memory_get`` and ``memory_curated`` work, a search says to index first."""
        from indexer.engine import index_location

        where, exists = index_location(self.cfg)
        if not exists:
            self._check_agent(agent)
            return answer(cast(api.Reader, _FilesOnly(self.cfg, where)))
        with self._searcher(agent, provider=embed) as s:
            return answer(s)

    def status(self, agent: str | None, req: api.StatusRequest) -> api.StatusResponse:
        from indexer.engine import index_location

        where, exists = index_location(self.cfg)
        if not exists:  # a state, not an error
            from indexer.search.searcher import status_before_indexing

            return status_before_indexing(self.cfg, where)
        with self._searcher(agent, provider=True) as s:
            return s.status()

    def _needs_daemon(self, method: str) -> UnknownMethod:
        return UnknownMethod(method, [], f"{method} is answered by the daemon (memindex serve)")

    def reindex(self, agent: str | None, req: api.ReindexRequest) -> api.ReindexResponse:
        """Sync the index in this process (no daemon serves it: this is its writer)."""
        self._check_agent(agent)
        from indexer.engine import AgentIndex, provider

        # quiet: the answer's providerState says what the provider is (the CLI
        # prints it); the index owns the provider and closes it
        with AgentIndex(self.cfg, selection=provider(self.cfg), quiet=True) as idx:
            answer = idx.sync(force=req.force, progress=self.progress).to_json()
            answer["indexPath"] = str(idx.writer.backend.where)
            state = idx.provider_state
        answer["agent"] = self.cfg.agent_name
        if state is not None:
            answer["providerState"] = state
        return answer

    def ping(self, agent: str | None, req: api.PingRequest) -> api.PingResponse:
        raise self._needs_daemon("ping")

    def qmd_search(self, agent: str | None, req: api.QmdSearchRequest) -> list[api.QmdResult]:
        raise self._needs_daemon("qmd_search")


class _FilesOnly:
    """An ``api.Reader`` with no index yet: what the files themselves answer
    (``get``, ``curated``); any other read method says to index first."""

    def __init__(self, cfg: Config, where: str) -> None:
        self.cfg, self.where = cfg, where

    def __getattr__(self, method: str) -> Callable[..., Any]:
        def needs_index(*_: object) -> Any:
            raise StoreError(f"no index at {self.where}: run 'memindex index' first")

        return needs_index

    def get(self, req: api.GetRequest) -> api.GetResponse:
        from indexer.search.documents import get_lines

        return get_lines(self.cfg, req)

    def curated(self, req: api.CuratedRequest) -> api.CuratedResponse:
        from indexer.search.curated_entries import curated_entries

        return curated_entries(self.cfg, req)
