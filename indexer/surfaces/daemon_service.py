"""The daemon's ``MemoryService``: what answers each method of ``api.METHODS`` on the
socket. Reads go to a pooled reader of the agent (never waiting for the writer);
``reindex`` is a job for the writer thread, answered when it is done; ``status``
adds the daemon's and the agent's health to the index's own; ``qmd_search`` is
answered only by ``memindex-qmd``'s daemon, which gives the hook."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar

from indexer import __version__
from indexer.api import (
    METHODS,
    PingRequest,
    PingResponse,
    QmdResult,
    QmdSearchRequest,
    ReindexRequest,
    ReindexResponse,
    SearchResponse,
    StatusRequest,
    StatusResponse,
    dispatch,
)
from indexer.config import Config
from indexer.errors import InvalidParams, StoreError, UnknownMethod
from indexer.openclaw import normalize_agent_id
from indexer.search.searcher import status_before_indexing
from indexer.sources.watcher import Watcher
from indexer.surfaces.agent import AgentRuntime
from indexer.surfaces.server import SocketServer
from indexer.surfaces.writer_tasks import WriterTasks

if TYPE_CHECKING:
    from indexer.search.searcher import Searcher

__all__ = ["DaemonService", "QmdHook"]

_REINDEX_TIMEOUT_S = 3600.0
_T = TypeVar("_T")
# memindex-qmd's search: (memory_search for the agent, through the table; the
# request) -> QMD's result items
QmdHook = Callable[
    [Callable[[dict[str, object]], SearchResponse], QmdSearchRequest], list[QmdResult]
]


class _Daemon(Protocol):
    """What the service reads of the daemon it answers for."""

    agents: dict[str, AgentRuntime]
    tasks: WriterTasks
    started: float
    socket_path: Path
    watcher: Watcher
    server: SocketServer
    reloads: int
    reload_error: str | None
    loop_errors: int
    idle_exit_s: float | None


class DaemonService:
    def __init__(self, daemon: _Daemon, qmd: QmdHook | None = None) -> None:
        self.daemon = daemon
        self.qmd = qmd

    def _agent(self, name: str | None) -> AgentRuntime:
        agents = self.daemon.agents
        if name is None:
            return next(iter(agents.values()))
        rt = agents.get(name) or agents.get(normalize_agent_id(name))
        if rt is None:
            raise InvalidParams(f"unknown agent '{name}' (serving: {', '.join(agents)})")
        return rt

    def read(self, agent: str | None, answer: Callable[[Searcher], _T], *, embed: bool) -> _T:
        """``answer`` with a pooled reader of the agent (its provider is loaded
        already: ``embed`` changes nothing here)."""
        rt = self._agent(agent)
        try:
            return rt.read(answer)
        except Exception as exc:  # a damaged index: the writer rebuilds it
            self.daemon.tasks.rebuild_if_damaged(rt, exc)
            raise

    def status(self, agent: str | None, req: StatusRequest) -> StatusResponse:
        rt = self._agent(agent)
        unopened: str | None = None
        try:
            st = self.read(agent, lambda s: s.status(), embed=True)
        except StoreError as exc:  # the index cannot be opened: status says so, and why
            st = status_before_indexing(rt.cfg, rt.writer.backend.where)
            unopened = exc.message
        d = self.daemon
        st["agent"] = rt.cfg.agent_name
        st["agents"] = list(d.agents)
        st["daemon"] = {
            "pid": os.getpid(),
            "uptimeS": round(time.time() - d.started, 1),
            "socket": str(d.socket_path),
            "watcher": d.watcher.status(),
            "refusedConnections": d.server.refused,
            "evictedConnections": d.server.evicted,
            "reloads": d.reloads,
            "reloadError": d.reload_error,
            "loopErrors": d.loop_errors,
            "idleExitS": d.idle_exit_s,
            "abandonedRequests": d.server.abandoned,
        }
        health = rt.report_health()
        st["dirty"] = health["dirty"]
        st["busy"] = health["busy"]
        st["stuck"] = health["stuck"]
        st["lastError"] = health["lastError"]
        st["errors"] = health["errors"]
        st["progress"] = health["progress"]
        if "transcriptTails" in health:
            st["transcriptTails"] = health["transcriptTails"]
        if unopened is not None:
            st["lastError"] = st.get("lastError") or unopened
        if st.get("mismatch"):  # not this daemon's index: never "all is well"
            st["dirty"] = True
            st["lastError"] = st.get("lastError") or st["mismatch"]
        gone = _folder_gone(rt.cfg, st)
        if gone:  # said at once, not only once a sync has run into it
            st["dirty"] = True
            st["lastError"] = st.get("lastError") or gone
        return st

    def reindex(self, agent: str | None, req: ReindexRequest) -> ReindexResponse:
        rt = self._agent(agent)
        fut: Future[ReindexResponse] = Future()
        self.daemon.tasks.submit(rt.cfg.agent_name, req.force, fut)
        return fut.result(timeout=_REINDEX_TIMEOUT_S)

    def ping(self, agent: str | None, req: PingRequest) -> PingResponse:
        agents = self.daemon.agents
        return {
            "ok": True,
            "version": __version__,
            "agents": {n: a.writer.backend.where for n, a in agents.items()},
            "workspaces": {
                n: str(a.cfg.workspace.resolve()) for n, a in agents.items() if a.cfg.workspace
            },
        }

    def qmd_search(self, agent: str | None, req: QmdSearchRequest) -> list[QmdResult]:
        if self.qmd is None:
            listed = [n for n, m in METHODS.items() if m.listed]
            raise UnknownMethod("qmd_search", listed)
        name = self._agent(agent).cfg.agent_name

        def search(params: dict[str, object]) -> SearchResponse:
            found: SearchResponse = dispatch(self, "memory_search", {**params, "agent": name})
            return found

        return self.qmd(search, req)


def _folder_gone(cfg: Config, st: StatusResponse) -> str | None:
    """Why the index cannot be current whatever the last sync said: the workspace is
    no folder now, or the sessions folder transcripts were indexed from is gone (and
    no agent database holds them)."""
    ws = cfg.workspace
    if ws is not None and not ws.is_dir():
        return f"workspace {ws} is not there (moved or deleted?): what it held stays indexed"
    sessions = cfg.sessions_dir()
    held = ((st.get("sources") or {}).get("sessions") or {}).get("files", 0)
    db = cfg.transcript_db()
    if sessions is not None and held and not sessions.is_dir() and not (db and db.is_file()):
        return f"sessions folder {sessions} is not there: the transcripts from it are kept"
    return None
