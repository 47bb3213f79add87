"""The read path: ``Searcher`` answers memory_search, memory_get and status on one
agent's index (an open store, read-only in the daemon's reader threads). It is
pooled: it keeps the checks that stay true between requests (vectors ready, both
sources present, the workspace), while each search is a ``run.SearchRun`` of its
own. Nothing here writes to the index.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING

from indexer import __version__
from indexer.api import (
    SOURCES,
    AuditRequest,
    AuditResponse,
    CuratedRequest,
    CuratedResponse,
    GetRequest,
    GetResponse,
    ProviderState,
    SearchRequest,
    SearchResponse,
    StatusResponse,
)
from indexer.config import Config
from indexer.errors import IndexMismatch
from indexer.search import run
from indexer.search.curated_entries import curated_entries
from indexer.search.documents import get_lines
from indexer.search.facts import IndexFacts
from indexer.search.query.gating import skip_reason
from indexer.search.recall_tally import RecallTally, load_recalls, recalls_path
from indexer.selection import NO_PROVIDER, provider_state, ready_state
from indexer.store import IndexStore
from indexer.store.records import FORGOTTEN
from providers.calibration import META_KEY, Scale

if TYPE_CHECKING:  # the providers' base loads when first used
    from indexer.search.snapshot.live import LiveIndex, Versions
    from providers.base import EmbeddingProvider

__all__ = ["Searcher", "status_before_indexing"]

SCALE_RECHECK_S = 2.0  # a missing similarity scale is looked for at most this often


class Searcher:
    """The read methods on ``store``. ``live``: the daemon's shared in-memory snapshot
    (None: read SQLite for each search)."""

    def __init__(
        self,
        cfg: Config,
        store: IndexStore,
        *,
        provider: EmbeddingProvider | None = None,
        provider_note: str = "",
        live: LiveIndex | None = None,
        provider_state: ProviderState | None = None,
        recalls: RecallTally | None = None,
        where: str = "",
    ) -> None:
        """``provider_note``: why ``provider`` is None (``selection.provider_note``);
        ``provider_state``: the configured provider's state as the process that built
        ``provider`` saw it (else found without loading anything, when asked);
        ``recalls``: where its searches' curated lines are counted (the daemon's);
        ``where``: the index as status names it (its file, or its database)."""
        self.cfg = cfg
        self.store = store
        self.provider = provider
        self.provider_note = provider_note
        self._state = provider_state
        self.live = live
        self.recalls = recalls
        self.where = where or str(cfg.resolved_index_path())
        self._sources_seen: tuple[str | None, bool] | None = None
        self._workspace_ok: tuple[str, str | None] | None = None
        self._ready_seen: tuple[object, bool, Scale | None] | None = None
        self._scale_next = 0.0  # when a missing scale is looked for again (monotonic)

    def get(self, req: GetRequest) -> GetResponse:
        kept = json.loads(self.store.meta_get(FORGOTTEN) or "[]")  # forgotten before
        return get_lines(self.cfg, req, frozenset(kept))

    def curated(self, req: CuratedRequest) -> CuratedResponse:
        return curated_entries(self.cfg, req)

    def audit(self, req: AuditRequest) -> AuditResponse:
        from indexer.search.audit import audit

        paths = list(self.store.file_states("memory"))
        if self.recalls is not None:
            recalled = self.recalls.counts()
        else:
            recalled = load_recalls(recalls_path(self.cfg))
        # its own questions (unfindable) are not the agent's: not counted
        found = audit(self.cfg, req, paths, self._search, recalled)
        # the memory files the index could not read (a symlink, a FIFO, a hard link…)
        found["checked"]["skipped"] = sum(
            1 for s in self.store.skipped() if s["source"] == "memory"
        )
        return found

    # -- search -----------------------------------------------------------------------

    def search(self, req: SearchRequest) -> SearchResponse:
        """``req.gate``: for auto-recall callers, answer small talk, slash commands and
        emoji-only input with no results (``skipped`` says why) instead of searching.
        The curated lines returned are counted in ``recalls`` (the daemon's)."""
        resp = self._search(req)
        if self.recalls is not None and resp["results"]:
            self.recalls.record(resp["results"])
        return resp

    def _search(self, req: SearchRequest) -> SearchResponse:
        if req.gate and (why := skip_reason(req.query)) is not None:
            return run.skipped(self.provider, why)
        versions = self.store.change_versions()
        snap = None if self.live is None else self.live.get(self.store, versions)
        self.check_workspace(versions)
        facts = IndexFacts(
            versions,
            snap,
            vectors=req.mode != "keyword" and self.vector_ready(versions),
            both_sources=not req.sources and self.both_sources(versions),
            no_vectors=self.no_vectors(),
            scale=self._ready_seen[2] if self._ready_seen is not None else None,
        )
        return run.search(self.cfg, self.store, self.provider, self.live, req, facts)

    def _provider_state(self) -> ProviderState:
        p = self.provider
        if p is not None:
            return ready_state(p.id, p.model)
        if self._state is None:
            self._state = provider_state(self.cfg)
        return self._state

    def no_vectors(self, *, fix: bool = True) -> str:
        """Why a search has no provider to embed the query with (``fix``: and what to
        do about a provider that failed)."""
        if self.provider_note:
            return self.provider_note
        st = self._provider_state()
        if st["state"] == "failed":
            how = f" (fix: {st['fix']})" if fix else ""
            return f"{st['name']} provider failed: {st['reason']}{how}"
        if st["state"] == "configured":
            return f"vectors for the {st['name']} provider are not built yet (run 'memindex index')"
        return NO_PROVIDER

    def vector_ready(self, versions: Versions) -> bool:
        """Whether vectors of this provider's model are built to search."""
        p = self.provider
        if p is None or not self.cfg.hybrid.enabled:
            return False
        # Re-checked when the index file or its chunks, vectors or model change
        # (every write that could change the answer bumps one of them).
        seen = (self.store.identity, versions)
        if self._ready_seen is None or self._ready_seen[0] != seen:
            ready = (
                self.store.has_vectors() and versions[2] == p.key() and self.store.any_embedded()
            )
            # The model's similarity scale, stored by the writer (None: cosines as is).
            scale = Scale.from_meta(self.store.meta_get(META_KEY), p.key()) if ready else None
            self._ready_seen = (seen, ready, scale)
        elif (
            self._ready_seen[1]
            and self._ready_seen[2] is None
            and time.monotonic() >= self._scale_next
        ):
            # Vectors without a scale yet (the writer measures it after them, and again
            # after a failure): read again until it is there, every few seconds at
            # most; writing it changes no version this cache is keyed by.
            self._scale_next = time.monotonic() + SCALE_RECHECK_S
            scale = Scale.from_meta(self.store.meta_get(META_KEY), p.key())
            if scale is not None:
                self._ready_seen = (seen, True, scale)
        return self._ready_seen[1]

    def after_write(self) -> None:
        """A writer in this process wrote: a missing scale is looked for at once."""
        self._scale_next = 0.0

    def both_sources(self, versions: Versions) -> bool:
        """Whether the index holds both sources, re-read when its chunks change."""
        version = versions[0]
        if self._sources_seen is None or self._sources_seen[0] != version:
            both = self.store.has_source("sessions") and self.store.has_source("memory")
            self._sources_seen = (version, both)
        return self._sources_seen[1]

    def check_workspace(self, versions: Versions) -> None:
        """Raise ``IndexMismatch`` when the index holds another workspace."""
        if self._workspace_ok == (self.store.identity, versions[0]):
            return  # a clear (a new workspace) changes the version
        self.cfg.require_workspace()
        indexed = self.store.meta_get("workspace")
        wrong = self._mismatch(indexed)
        if wrong:
            raise IndexMismatch(wrong)
        if indexed is not None:
            self._workspace_ok = (self.store.identity, versions[0])

    def _mismatch(self, indexed: str | None) -> str | None:
        """Why the index cannot answer for this workspace, or None (also when the
        workspace is gone: that is the sync's error to report)."""
        if indexed is None or self.cfg.workspace is None:
            return None
        current = str(self.cfg.workspace.resolve())
        if indexed == current:
            return None
        return (
            f"index {self.where} holds workspace {indexed}, not {current}: "
            "run 'memindex index' to rebuild it for this workspace"
        )

    # -- status -----------------------------------------------------------------------

    def status(self) -> StatusResponse:
        # the versions first, the rest after: never data older than its versions (a
        # daemon's reader takes the versions from its writer, newer than a snapshot)
        changed = self.store.change_versions()
        with self.store.read_snapshot():  # one state, and PostgreSQL's meta in one read
            return self._status(changed)

    def _status(self, changed: Versions) -> StatusResponse:
        s = self.store
        last = s.meta_get("lastSync")
        fp = s.meta_get("fingerprint")
        counts = s.counts()
        ready = self.vector_ready(changed)
        for src in SOURCES:
            counts.setdefault(src, {"files": 0, "chunks": 0})
        p = self.provider
        if s.vector_error or ready:
            reason = s.vector_error
        else:
            reason = self.no_vectors(fix=False) if p is None else "vectors not built yet"
        sessions_dir = self.cfg.sessions_dir()
        versions = s.versions()
        out: StatusResponse = {
            "version": __version__,
            "indexPath": self.where,
            "workspace": s.meta_get("workspace"),
            "sources": counts,
            "files": sum(c["files"] for c in counts.values()),
            "chunks": sum(c["chunks"] for c in counts.values()),
            "provider": p.id if p else None,
            "model": p.model if p else None,
            "dims": p.dims if p else None,
            "providerState": self._provider_state(),
            "mode": "hybrid" if ready else "keyword",
            "vector": {
                "enabled": ready,
                "available": s.vec_version is not None,
                "reason": reason,
                "indexedModel": s.meta_get("vectorModel"),
                "pendingChunks": s.pending_count() if s.has_vectors() else None,
                "cacheEntries": s.cache_count(),
            },
            "fingerprint": json.loads(fp) if fp else None,
            "lastSync": json.loads(last) if last else None,
            "dirty": last is None,
            "pendingBatches": s.all_batch_jobs(),
            "skipped": s.skipped(),
            "sessionsDir": str(sessions_dir) if sessions_dir else None,
            "transcriptsNote": self.cfg.transcripts_note(),
            "malformedLines": sum(c.malformed for c in s.session_cursors().values()),
            "indexBytes": s.size_bytes(),
            "checkedAt": time.time(),
        }
        if self.live is not None:  # the daemon's
            out["memory"] = self.live.state(s.identity, changed)
        wrong = self._mismatch(out["workspace"])
        if wrong:
            out["mismatch"] = wrong
            out["dirty"] = True
        recovered = s.meta_get("recovered")
        if recovered:
            out["recovered"] = json.loads(recovered)
        if "sqlite" in versions:
            out["sqlite"] = versions
        else:
            out["postgresql"] = versions
        return out


def status_before_indexing(cfg: Config, where: str) -> StatusResponse:
    """``status`` of an agent whose index has not been built yet: empty, dirty, and
    the provider's state (what ``memindex index`` would use)."""
    sessions_dir = cfg.sessions_dir()
    state = provider_state(cfg)
    empty = {"files": 0, "chunks": 0}
    reason = state["reason"] if state["state"] != "configured" else "vectors not built yet"
    return {
        "version": __version__,
        "indexPath": where,
        "workspace": str(cfg.workspace.resolve()) if cfg.workspace else None,
        "sources": {src: dict(empty) for src in SOURCES},
        "files": 0,
        "chunks": 0,
        "provider": None,
        "model": None,
        "dims": None,
        "providerState": state,
        "mode": "keyword",
        "vector": {
            "enabled": False,
            "available": False,
            "reason": reason,
            "indexedModel": None,
            "pendingChunks": None,
            "cacheEntries": 0,
        },  # fmt: skip
        "fingerprint": None,
        "lastSync": None,
        "dirty": True,
        "pendingBatches": [],
        "skipped": [],
        "sessionsDir": str(sessions_dir) if sessions_dir else None,
        "transcriptsNote": cfg.transcripts_note(),
        "malformedLines": 0,
        "indexBytes": 0,
        "checkedAt": time.time(),
    }
