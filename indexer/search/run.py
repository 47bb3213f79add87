"""One search request, from its query to its results: ``SearchRun`` holds what this
request has read (the index's versions, the daemon's snapshot, the parsed query, the
chunk rows) and what its stages noted (rerank, abstention, explain), so the pooled
``Searcher`` it runs on keeps nothing of it.

The stages: keyword candidates (the snapshot's in-memory postings, else FTS5;
``keyword_hits``) and, when vectors are built for the provider, the query's vector
neighbours (the snapshot's vectors, else the store's; ``vector_memory``) → fusion
(``fusion``) → the floor → decay, the time the query names, rerank, source
balance, MMR (``ranking``, ``rerank_stage``) → result objects (``results``).

Time words ("yesterday", "in October"; ``when``) are read as windows of days and
taken out of what is searched; a question about a name memory lacks is capped in
relevance (``names``).
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TYPE_CHECKING

from indexer.api import MAX_RESULTS, SearchRequest, SearchResponse, SearchResult
from indexer.search.candidates import Candidate, ChunkRows, Notes
from indexer.search.decisions import decision_first
from indexer.search.facts import IndexFacts
from indexer.search.first_mention import first_mention
from indexer.search.fusion import fuse_for_query
from indexer.search.keyword_hits import EXACT_BOOST, keyword_search
from indexer.search.names import ABSENT_NAME_RELEVANCE, all_names_absent
from indexer.search.query import parse_query
from indexer.search.ranking import (
    apply_decay,
    balance_sources,
    boost_window,
    curated_signals,
    mmr,
    relevance,
)
from indexer.search.results import REACH, envelope, render_results
from indexer.search.time_scope import TimeScope, with_window
from indexer.search.when import TIME_FILLER, asked
from indexer.selection import provider_spec
from indexer.sources.redaction import redact
from indexer.store.records import KeywordQuery
from providers.errors import ProviderError, ProviderTimeout

if TYPE_CHECKING:  # numpy and the providers' base load when first used
    import numpy as np
    import numpy.typing as npt

    from indexer.config import Config
    from indexer.search.live import LiveIndex
    from indexer.store import IndexStore
    from providers.base import EmbeddingProvider

__all__ = ["SearchRun", "search", "skipped"]

# Words and a time of at most this many days ("what did I buy last Friday"): what
# is dated then follows what holds the words, scoring WINDOW_SCORE (the time
# matches, not the words), so a note that says "bought" is not lost to "buy".
WINDOW_LISTED_DAYS = 31
WINDOW_SCORE = 0.5
WINDOW_DEPTH = 4

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


def search(
    cfg: Config,
    store: IndexStore,
    provider: EmbeddingProvider | None,
    live: LiveIndex | None,
    req: SearchRequest,
    facts: IndexFacts,
) -> SearchResponse:
    """``memory_search`` for ``req``."""
    return SearchRun(cfg, store, provider, live, req, facts).answer()


def skipped(provider: EmbeddingProvider | None, why: str) -> SearchResponse:
    """The answer to a gated query that is not searched (small talk, a slash command)."""
    out = envelope(Notes(), provider, [], "skipped", None)
    out["skipped"] = why
    return out


class SearchRun:
    """``memory_search`` for one request."""

    def __init__(
        self,
        cfg: Config,
        store: IndexStore,
        provider: EmbeddingProvider | None,
        live: LiveIndex | None,
        req: SearchRequest,
        facts: IndexFacts,
    ) -> None:
        self.cfg, self.store, self.provider, self.live = cfg, store, provider, live
        self.req = req
        self.facts = facts
        self.today, self.tz, self.when = asked(
            req.query, req.as_of, req.time_zone or cfg.query.timeZone, read=cfg.query.dateBoost > 0
        )
        self.text = self.when.rest if self.when.windows else req.query  # what is searched
        self.q = parse_query(self.text)
        self.limit = min(req.max_results or cfg.query.maxResults, MAX_RESULTS)
        self.floor = cfg.query.minScore if req.min_score is None else req.min_score
        self.wanted = list(req.sources) if req.sources else None
        self.chars = cfg.query.maxSnippetChars
        self.rows = ChunkRows(store)
        self.scope = TimeScope(store, self.when, self.tz, self.wanted)
        if self.when.windows and not self._only_time():
            # With a topic, a window memory holds no day of is words, not a time
            # ("where did she move from 4 years ago"); "recently" always means newer.
            held = tuple(w for w in self.when.windows if w.soft or self.scope.holds_any(w))
            if held != self.when.windows:
                self.when = self.scope.when = self.when.keeping(held)
                self.text = self.when.rest if held else req.query
                self.q = parse_query(self.text)
        self.notes = Notes()
        h = cfg.hybrid
        self.weight = h.vectorWeight / ((h.vectorWeight + h.textWeight) or 1.0)  # fusion's
        self.share: float | None = None  # the query's words the best keyword hits hold

    def answer(self) -> SearchResponse:
        req, facts = self.req, self.facts
        if self.when.windows and self._only_time():  # "what did I do yesterday?"
            return self._envelope(self._listing(), "keyword", None)
        missing = self._absent_token()
        if missing is not None:  # a vector neighbour of an ID nobody wrote is noise
            out = self._envelope([], "keyword", None)
            out["abstained"] = f"no memory contains {redact(missing)}"  # never echo a secret
            return out
        fallback: str | None = f"{facts.no_vectors}: keyword search only"
        if req.mode == "keyword":
            fallback = None
        elif facts.vectors:
            try:
                return self._with_vectors()
            except ProviderError as exc:
                fallback = f"query embedding failed ({exc.message}): keyword search only"
                self.rows = ChunkRows(self.store)
        elif self.provider is not None:
            fallback = (  # the daemon embeds on its own: status says what stops it
                "vectors are not built yet ('memindex status' says why; without a daemon "
                "'memindex index' builds them): keyword search only"
            )
        hits = self._keyword(self.limit * 4, self.floor)
        return self._envelope(self._finish(hits), "keyword", fallback)

    def _absent_token(self) -> str | None:
        """For a query made only of exact tokens (an ID, an error code, a path): the
        first one if no chunk holds any of them as written, else None."""
        q = self.q
        if not q.exact or q.terms or q.required or q.cjk:
            return None
        phrases = tuple(p for p in q.exact_parts if p)
        if not phrases:
            return None
        found = self.store.fts_search(KeywordQuery((), phrases), 200, self.wanted)
        if any(needle in row.text.lower() for row in found for needle in q.exact):
            return None
        return q.exact[0]

    def _deeper(self) -> int:
        """How much deeper hybrid's candidate lists go: a topic within a named time
        of a month or less ("what came up at standup two days ago") looks
        WINDOW_DEPTH times deeper, so the window's match is among the candidates
        when the topic's words are common elsewhere, and the date boost ranks it.
        (Keyword search places the window's chunks it did not find after its word
        hits, which rank on one scale.)"""
        return WINDOW_DEPTH if self._short_hard_window() else 1

    def _short_hard_window(self) -> bool:
        """A time with an edge ("yesterday", "last week"; not "recently") of at most
        WINDOW_LISTED_DAYS days: its chunks are listed after the word hits."""
        w = self.when
        return (
            bool(w.windows)
            and not any(x.soft for x in w.windows)
            and (w.days() <= WINDOW_LISTED_DAYS)
        )

    def _only_time(self) -> bool:
        q = self.q
        if q.exact or q.required or q.cjk:
            return False
        return q.filler or all(t in TIME_FILLER for t in q.terms)

    def _listing(self) -> list[SearchResult]:
        """A query that is only time: what is dated in its windows (``TimeScope.dated``).
        Every result scores 1 (it is what was asked for)."""
        hits = self.scope.dated(self.rows, 1.0, 4 * self.limit)
        if self.req.explain:
            self.notes.explain = {"timeOnly": True, "dateBoost": self.cfg.query.dateBoost}
        if self.req.abstain or self.req.explain:  # the time is what was asked: all or none
            self.notes.relevance = 1.0 if hits else 0.0
        return render_results(
            hits, self.q, self.limit, self.chars, self.rows, explain=self.req.explain
        )

    def _parts(self) -> list[list[str] | None]:
        """Both sources asked for and both present: search each on its own, so the
        larger transcript corpus cannot push memory chunks out of the candidates."""
        if self.facts.both_sources:
            return [["memory"], ["sessions"]]
        return [self.wanted]

    def _keyword(self, pool: int, floor: float, *, break_ties: bool = True) -> list[Candidate]:
        """Keyword candidates from each part of ``_parts`` (at least one)."""
        parts = self._parts()
        in_memory = None
        snap, live = self.facts.snapshot, self.live
        if snap is not None and snap.keywords is not None and live is not None:
            in_memory = snap.keywords.search(live.tokens, self.q, pool, parts)
        hits: list[Candidate] = []
        for n, part in enumerate(parts):
            hits += keyword_search(
                self.store,
                self.q,
                self.rows,
                limit=pool,
                min_score=floor,
                sources=part,
                candidates=pool,
                found=None if in_memory is None else in_memory[n],
                break_ties=break_ties,
            )
        hits.sort(key=lambda h: -h.score)
        return hits

    def _with_vectors(self) -> SearchResponse:
        """Hybrid (keyword and vector candidates fused), or vector only."""
        provider = self.provider
        assert provider is not None
        req, h = self.req, self.cfg.hybrid
        vector_only = req.mode == "vector"
        pool = max(self.limit, self.limit * h.candidateMultiplier)
        if not vector_only:
            pool *= self._deeper()
        parts = self._parts()
        # The query is embedded on a pool thread (llama.cpp and HTTP release the GIL)
        # while this thread does the keyword half; the vector scan comes after it, so
        # numpy's BLAS threads do not compete with Python for the cores.
        from indexer.search.vector_memory import stored_neighbours
        from providers.retry import RetryPolicy, call_with_retries

        query = self.text
        limit_s = self.cfg.provider.remote.queryTimeoutMs / 1000
        job = _pool().submit(
            call_with_retries,
            lambda: provider.embed_query(query),
            RetryPolicy(attempts=2, initial=0.2, maximum=1.0),
        )
        deadline = time.monotonic() + limit_s
        rows = self.rows
        # Weighted fusion scores each side on its own: the keyword order among equal
        # BM25 scores does not matter to it (rank fusion uses it).
        kw = [] if vector_only else self._keyword(pool, 0.0, break_ties=h.fusion == "rrf")
        try:
            qvec: npt.NDArray[np.float32] = job.result(
                timeout=max(0.0, deadline - time.monotonic())
            )[0]
        except FutureTimeout as exc:
            raise ProviderTimeout(f"query embedding took longer than {limit_s:g}s") from exc
        snap = self.facts.snapshot
        vec = None if snap is None else snap.vectors
        found = (  # one pass for all parts; never waits for a reload
            [hit for part in vec.search(qvec, pool, parts) for hit in part]
            if vec is not None and vec.key == self.facts.versions[2]
            else None
        )
        if found is not None:
            near = [(cid, sim) for cid, sim, _ in found]
            sources = {cid: source for cid, _, source in found}
        else:
            near = [
                hit
                for part in parts
                for hit in stored_neighbours(self.store, qvec, pool, part, rows)
            ]
            # fuse() needs the source of the neighbours that are not keyword hits
            known = {c.id for c in kw}
            fresh = [cid for cid, _ in near if cid not in known]
            rows.need(fresh)
            sources = {cid: row.source for cid in fresh if (row := rows.get(cid)) is not None}
        fused, self.weight, self.share = fuse_for_query(
            self.q,
            kw,
            near,
            sources,
            rows,
            min_score=self.floor,
            fusion=h.fusion,
            base=self.weight,  # the configured share, until here
            weak=h.vectorWeightWeak,
            rrf_k=h.rrfK,
            scale=self.facts.scale,
            vector_only=vector_only,
        )
        return self._envelope(self._finish(fused), "vector" if vector_only else "hybrid", None)

    def _finish(self, hits: list[Candidate]) -> list[SearchResult]:
        """Decay, date boost, rerank, source balance and MMR (as configured), then
        result objects; when both sources were searched, the same memory in both is
        one result."""
        req, qc, rows, limit = self.req, self.cfg.query, self.rows, self.limit
        hits = curated_signals(hits, rows, req.active_projects)
        dated: set[int] = set()  # the window's chunks shown for their time alone
        if qc.temporalDecay:
            hits = apply_decay(hits, rows, qc.halfLifeDays)
        if self.when.windows:
            hits = boost_window(hits, rows, self.when, self.tz, qc.dateBoost)
            if self._short_hard_window() and self.floor <= WINDOW_SCORE:
                known = {h.id for h in hits}  # "what did I buy last Friday"
                extra = self.scope.dated(rows, WINDOW_SCORE, 2 * limit)
                extra = [c for c in extra if c.id not in known]
                hits = with_window(hits, extra, WINDOW_SCORE)  # dated hits not below them
                dated = {c.id for c in extra}
        hits = first_mention(hits, self.q, rows, self.tz, timed=bool(self.when.windows))
        hits = decision_first(hits, self.q, req.query, rows, REACH * limit)
        if self.cfg.rerank.provider and hits:
            from indexer.search.rerank_stage import rerank

            cache_dir = provider_spec(self.cfg).model_cache_dir
            done = rerank(self.cfg.rerank, req.query, hits, rows, _pool(), cache_dir)
            hits, self.notes.rerank = done.hits, done.info
            if done.fallback:
                self.notes.fallback = done.fallback
        both = self.facts.both_sources
        if both:
            hits = balance_sources(hits, limit, qc.memoryShare)
        if qc.mmr:
            hits = mmr(hits, rows, limit, qc.mmrLambda)
        if req.explain:
            h = self.cfg.hybrid
            self.notes.explain = {
                "fusion": h.fusion,
                "vectorWeight": round(self.weight, 4),
                "textWeight": round(1.0 - self.weight, 4),
                **({} if self.share is None else {"queryWordsHeld": round(self.share, 4)}),
                "minScore": self.floor,
                "temporalDecay": qc.temporalDecay,
                "dateBoost": qc.dateBoost,
                "asOf": self.today.isoformat(),
                "mmr": qc.mmr,
                "exactBoost": 1.0 + EXACT_BOOST,
            }
        if req.abstain or req.explain:
            signal = round(relevance(list(self.q.words), hits, rows), 4)
            top_rows = [r for h in hits[:3] if (r := rows.get(h.id)) is not None]  # read
            if any(h.id in dated for h in hits[:3]):  # the time matches, if not the words
                signal = max(signal, WINDOW_SCORE)
            if signal > ABSENT_NAME_RELEVANCE and all_names_absent(
                self.store, req.query, self.wanted, [r.text.lower() for r in top_rows]
            ):  # "what did Caroline say" of a memory with no Caroline
                signal = ABSENT_NAME_RELEVANCE
            self.notes.relevance = signal
            if req.abstain and signal < qc.abstainBelow:
                self.notes.abstained = (
                    f"relevance {signal:.2f} is below query.abstainBelow "
                    f"{qc.abstainBelow:g}: no result is likely to answer this"
                )
                return []
        return render_results(
            hits, self.q, limit, self.chars, rows, explain=req.explain, merge_sources=both
        )

    def _envelope(
        self, results: list[SearchResult], mode: str, fallback: str | None
    ) -> SearchResponse:
        out = envelope(self.notes, self.provider, results, mode, fallback)
        if self.when.windows:
            out["time"] = [
                {"said": w.said, "from": w.first.isoformat(), "to": w.last.isoformat()}
                for w in self.when.windows
            ]
        return out
