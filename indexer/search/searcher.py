"""The read path: ``Searcher`` answers memory_search, memory_get and status on one
agent's index (an open store, read-only in the daemon's reader threads).

A search: keyword candidates (the in-memory postings of the daemon's snapshot,
live.py, else FTS5) and, when vectors are built for the provider, the query's vector
neighbours (the snapshot's vectors, else sqlite-vec) → fusion → the floor → decay,
dates the query names, rerank, source balance, MMR → result objects
(``retrieval.render_results``), as immutable ``candidates.Candidate`` records whose
rows are read once (``ChunkRows``).
Nothing here writes to the index.
"""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TYPE_CHECKING, Any

from indexer import __version__
from indexer.api import (
    MAX_RESULTS,
    SOURCES,
    GetRequest,
    GetResponse,
    SearchRequest,
    SearchResponse,
    SearchResult,
    StatusResponse,
)
from indexer.config import Config
from indexer.errors import IndexMismatch
from indexer.search.candidates import Candidate, ChunkRows
from indexer.search.dates import period_text, query_periods
from indexer.search.documents import get_lines
from indexer.search.gating import skip_reason
from indexer.search.query import ParsedQuery, parse_query
from indexer.search.ranking import apply_decay, balance_sources, boost_dated, mmr, relevance
from indexer.search.retrieval import EXACT_BOOST, fuse, keyword_search, render_results
from indexer.selection import NO_PROVIDER, provider_spec, provider_state
from indexer.sources.redaction import redact
from indexer.store import IndexStore
from indexer.store.backend import backend_for
from indexer.store.records import KeywordQuery
from providers.errors import ProviderError, ProviderTimeout

if TYPE_CHECKING:  # numpy, the providers' base and tenacity load when first used
    import numpy as np
    import numpy.typing as npt

    from indexer.search.live import LiveIndex, Snapshot
    from providers.base import EmbeddingProvider

__all__ = ["Searcher"]

_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    """Query embeddings with a deadline run here; sized for many concurrent socket
    clients (the threads mostly wait in a provider). Made on first use."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=64, thread_name_prefix="memindex-search")
        return _POOL


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
        provider_state: dict[str, Any] | None = None,
    ) -> None:
        """``provider_note``: why ``provider`` is None (``selection.provider_note``);
        ``provider_state``: the configured provider's state as the process that built
        ``provider`` saw it (else found without loading anything, when asked)."""
        self.cfg = cfg
        self.store = store
        self.provider = provider
        self.provider_note = provider_note
        self._state = provider_state
        self.live = live
        self._snap: Snapshot | None = None  # the snapshot this search reads
        self._sources_seen: tuple[str | None, bool] | None = None
        self._workspace_ok: tuple[str, str | None] | None = None
        # Read at the start of search(): chunksVersion, vectorsVersion, vectorKey.
        self._versions: tuple[str | None, str | None, str | None] = (None, None, None)
        self._ready_seen: tuple[object, bool] | None = None
        self._notes: dict[str, Any] = {}  # this search's rerank, abstain and explain notes

    def get(self, req: GetRequest) -> GetResponse:
        return get_lines(self.cfg, req)

    # -- search -----------------------------------------------------------------------

    def _envelope(
        self, results: list[SearchResult], mode: str, fallback: str | None
    ) -> SearchResponse:
        p = self.provider
        notes = self._notes
        if notes.get("fallback"):  # the rerank stage's
            fallback = f"{fallback}; {notes['fallback']}" if fallback else notes["fallback"]
        out: SearchResponse = {
            "results": results,
            "provider": p.id if p else None,
            "model": p.model if p else None,
            "mode": mode,
            "fallback": fallback,
        }
        if "relevance" in notes:
            out["relevance"] = notes["relevance"]
        if notes.get("abstained"):
            out["abstained"] = notes["abstained"]
        if "explain" in notes:
            out["explain"] = notes["explain"] | (
                {"rerank": notes["rerank"]} if "rerank" in notes else {}
            )
        return out

    def search(self, req: SearchRequest) -> SearchResponse:
        """``req.gate``: for auto-recall callers, answer small talk, slash commands and
        emoji-only input with no results (``skipped`` says why) instead of searching."""
        self._notes = {}
        if req.gate and (why := skip_reason(req.query)) is not None:
            out = self._envelope([], "skipped", None)
            out["skipped"] = why
            return out
        limit = min(req.max_results or self.cfg.query.maxResults, MAX_RESULTS)
        floor = self.cfg.query.minScore if req.min_score is None else req.min_score
        wanted = list(req.sources) if req.sources else None
        self._versions = self.store.change_versions()
        self._snap = None if self.live is None else self.live.get(self.store, self._versions)
        self._check_workspace()
        missing = self._absent_token(req.query, wanted)
        if missing is not None:  # a vector neighbour of an ID nobody wrote is noise
            out = self._envelope([], "keyword", None)
            out["abstained"] = f"no memory contains {redact(missing)}"  # never echo a secret
            return out
        chars = self.cfg.query.maxSnippetChars
        fallback: str | None = f"{self._no_vectors()}: keyword search only"
        if req.mode == "keyword":
            fallback = None
        elif self._vector_ready():
            try:
                return self._with_vectors(req, limit, floor, wanted, chars)
            except ProviderError as exc:
                fallback = f"query embedding failed ({exc.message}): keyword search only"
        elif self.provider is not None:
            fallback = "vectors are not built yet (run 'memindex index'): keyword search only"
        rows = ChunkRows(self.store)
        q, hits = self._keyword(req.query, rows, limit * 4, floor, self._split_sources(wanted))
        results = self._finish(req, hits, rows, q, limit, chars, wanted)
        return self._envelope(results, "keyword", fallback)

    def _absent_token(self, query: str, sources: list[str] | None) -> str | None:
        """For a query made only of exact tokens (an ID, an error code, a path): the
        first one if no chunk holds any of them as written, else None."""
        q = parse_query(query)
        if not q.exact or q.terms or q.required or q.cjk:
            return None
        phrases = tuple(tuple(p) for p in q.exact_parts if p)
        if not phrases:
            return None
        rows = self.store.fts_search(KeywordQuery((), phrases), 200, sources)
        if any(needle in row.text.lower() for row in rows for needle in q.exact):
            return None
        return q.exact[0]

    def _provider_state(self) -> dict[str, Any]:
        p = self.provider
        if p is not None:
            return {"name": p.id, "model": p.model, "state": "ready", "reason": None, "fix": None}
        if self._state is None:
            self._state = provider_state(self.cfg)
        return self._state

    def _no_vectors(self, *, fix: bool = True) -> str:
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

    def _vector_ready(self) -> bool:
        p = self.provider
        if p is None or not self.cfg.hybrid.enabled:
            return False
        # Re-checked when the index file or its chunks, vectors or model change
        # (every write that could change the answer bumps one of them).
        seen = (self.store.generation, self._versions)
        if self._ready_seen is None or self._ready_seen[0] != seen:
            ready = (
                self.store.has_vectors()
                and self._versions[2] == p.key()
                and self.store.any_embedded()
            )
            self._ready_seen = (seen, ready)
        return self._ready_seen[1]

    def _split_sources(self, wanted: list[str] | None) -> list[list[str] | None]:
        """Both sources asked for and both present: search each on its own, so the
        larger transcript corpus cannot push memory chunks out of the candidates."""
        if wanted is None and self._both_sources():
            return [["memory"], ["sessions"]]
        return [wanted]

    def _both_sources(self) -> bool:
        """Whether the index holds both sources, re-read when its chunks change."""
        version = self._versions[0]
        if self._sources_seen is None or self._sources_seen[0] != version:
            both = self.store.has_source("sessions") and self.store.has_source("memory")
            self._sources_seen = (version, both)
        return self._sources_seen[1]

    def _keyword(
        self,
        query: str,
        rows: ChunkRows,
        pool: int,
        floor: float,
        parts: list[list[str] | None],
        *,
        break_ties: bool = True,
    ) -> tuple[ParsedQuery, list[Candidate]]:
        """Keyword candidates from each part of ``_split_sources`` (at least one)."""
        q = parse_query(query)
        in_memory = None
        snap = self._snap
        if snap is not None and snap.keywords is not None and self.live is not None:
            in_memory = snap.keywords.search(self.live.tokens, q, pool, parts)
        hits: list[Candidate] = []
        for n, part in enumerate(parts):
            q, found = keyword_search(
                self.store,
                q,
                rows,
                limit=pool,
                min_score=floor,
                sources=part,
                candidates=pool,
                found=None if in_memory is None else in_memory[n],
                break_ties=break_ties,
            )
            hits.extend(found)
        hits.sort(key=lambda h: -h.score)
        return q, hits

    def _finish(
        self,
        req: SearchRequest,
        hits: list[Candidate],
        rows: ChunkRows,
        q: ParsedQuery,
        limit: int,
        chars: int,
        wanted: list[str] | None,
    ) -> list[SearchResult]:
        """Decay, date boost, rerank, source balance and MMR (as configured), then
        result objects; when both sources were searched, the same memory in both is
        one result."""
        qc = self.cfg.query
        if qc.temporalDecay:
            hits = apply_decay(hits, rows, qc.halfLifeDays)
        periods = query_periods(req.query) if qc.dateBoost > 0 else ()
        if periods and hits:
            hits = boost_dated(hits, rows, periods, qc.dateBoost)
        if self.cfg.rerank.provider and hits:
            from indexer.search.rerank import rerank

            cache_dir = provider_spec(self.cfg).model_cache_dir
            done = rerank(self.cfg.rerank, req.query, hits, rows, _pool(), cache_dir)
            hits, self._notes["rerank"] = done.hits, done.info
            if done.fallback:
                self._notes["fallback"] = done.fallback
        both = wanted is None and self._both_sources()
        if both:
            hits = balance_sources(hits, limit, qc.memoryShare)
        if qc.mmr:
            hits = mmr(hits, rows, limit, qc.mmrLambda)
        if req.explain:
            h = self.cfg.hybrid
            self._notes["explain"] = {
                "fusion": h.fusion,
                "vectorWeight": h.vectorWeight,
                "textWeight": h.textWeight,
                "minScore": self.cfg.query.minScore if req.min_score is None else req.min_score,
                "temporalDecay": qc.temporalDecay,
                "dateBoost": qc.dateBoost,
                "dates": [period_text(p) for p in periods],
                "mmr": qc.mmr,
                "exactBoost": 1.0 + EXACT_BOOST,
            }
        if req.abstain or req.explain:
            signal = round(relevance(q.match_words(), hits, rows), 4)
            self._notes["relevance"] = signal
            if req.abstain and signal < qc.abstainBelow:
                self._notes["abstained"] = (
                    f"relevance {signal:.2f} is below query.abstainBelow "
                    f"{qc.abstainBelow:g}: no result is likely to answer this"
                )
                return []
        return render_results(hits, q, limit, chars, rows, explain=req.explain, merge_sources=both)

    def _with_vectors(
        self, req: SearchRequest, limit: int, floor: float, wanted: list[str] | None, chars: int
    ) -> SearchResponse:
        """Hybrid (keyword and vector candidates fused), or vector only."""
        provider = self.provider
        assert provider is not None
        h = self.cfg.hybrid
        vector_only = req.mode == "vector"
        pool = max(limit, limit * h.candidateMultiplier)
        parts = self._split_sources(wanted)
        # The query is embedded on a pool thread (llama.cpp and HTTP release the GIL)
        # while this thread does the keyword half; the vector scan comes after it, so
        # numpy's BLAS threads do not compete with Python for the cores (measured:
        # scanning in parallel with the keyword half was 10-15% slower at 100k).
        from indexer.search.vectors import knn_sqlite
        from providers.retry import RetryPolicy, call_with_retries

        query = req.query
        limit_s = self.cfg.provider.remote.queryTimeoutMs / 1000
        job = _pool().submit(
            call_with_retries,
            lambda: provider.embed_query(query),
            RetryPolicy(attempts=2, initial=0.2, maximum=1.0),
        )
        deadline = time.monotonic() + limit_s
        rows = ChunkRows(self.store)
        if vector_only:
            q, kw = parse_query(query), list[Candidate]()
        else:
            # Weighted fusion scores each side on its own: the keyword order among
            # equal BM25 scores does not matter to it (rank fusion uses it).
            q, kw = self._keyword(query, rows, pool, 0.0, parts, break_ties=h.fusion == "rrf")
        try:
            qvec: npt.NDArray[np.float32] = job.result(
                timeout=max(0.0, deadline - time.monotonic())
            )[0]
        except FutureTimeout as exc:
            raise ProviderTimeout(f"query embedding took longer than {limit_s:g}s") from exc
        vec = None if self._snap is None else self._snap.vectors
        found = (  # one pass for all parts; never waits for a reload
            [hit for part in vec.search(qvec, pool, parts) for hit in part]
            if vec is not None and vec.key == self._versions[2]
            else None
        )
        if found is not None:
            near = [(cid, sim) for cid, sim, _ in found]
            sources = {cid: source for cid, _, source in found}
        else:
            near = [hit for part in parts for hit in knn_sqlite(self.store, qvec, pool, part, rows)]
            # fuse() needs the source of the neighbours that are not keyword hits
            known = {h.id for h in kw}
            fresh = [cid for cid, _ in near if cid not in known]
            rows.need(fresh)
            sources = {cid: row.source for cid in fresh if (row := rows.get(cid)) is not None}
        fused = fuse(
            q,
            kw,
            sorted(near, key=lambda x: -x[1]),
            sources,
            rows,
            min_score=floor,
            fusion="weighted" if vector_only else h.fusion,
            vector_weight=1.0 if vector_only else h.vectorWeight,
            text_weight=0.0 if vector_only else h.textWeight,
            rrf_k=h.rrfK,
        )
        results = self._finish(req, fused, rows, q, limit, chars, wanted)
        return self._envelope(results, "vector" if vector_only else "hybrid", None)

    def _check_workspace(self) -> None:
        if self._workspace_ok == (self.store.generation, self._versions[0]):
            return  # a clear (a new workspace) changes the version
        self.cfg.require_workspace()
        indexed = self.store.meta_get("workspace")
        wrong = self._mismatch(indexed)
        if wrong:
            raise IndexMismatch(wrong)
        if indexed is not None:
            self._workspace_ok = (self.store.generation, self._versions[0])

    def _mismatch(self, indexed: str | None) -> str | None:
        """Why the index cannot answer for this workspace, or None (also when the
        workspace is gone: that is the sync's error to report)."""
        if indexed is None or self.cfg.workspace is None:
            return None
        current = str(self.cfg.workspace.resolve())
        if indexed == current:
            return None
        return (
            f"index {backend_for(self.cfg).where} holds workspace {indexed}, not {current}: "
            "run 'memindex index' to rebuild it for this workspace"
        )

    # -- status -----------------------------------------------------------------------

    def status(self) -> StatusResponse:
        s = self.store
        last = s.meta_get("lastSync")
        fp = s.meta_get("fingerprint")
        counts = s.counts()
        self._versions = s.change_versions()
        ready = self._vector_ready()
        for src in SOURCES:
            counts.setdefault(src, {"files": 0, "chunks": 0})
        p = self.provider
        if s.vector_error or ready:
            reason = s.vector_error
        else:
            reason = self._no_vectors(fix=False) if p is None else "vectors not built yet"
        sessions_dir = self.cfg.sessions_dir()
        versions = s.versions()
        out: StatusResponse = {
            "version": __version__,
            "indexPath": backend_for(self.cfg).where,
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
            "malformedLines": sum(c.malformed for c in s.session_cursors().values()),
            "indexBytes": s.size_bytes(),
            "checkedAt": time.time(),
        }
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
        "malformedLines": 0,
        "indexBytes": 0,
        "checkedAt": time.time(),
    }
