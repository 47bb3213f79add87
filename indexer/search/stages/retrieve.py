"""Retrieval: where the candidates come from.

* ``absentToken``: a query made only of exact tokens (an ID, a code, a path) that no
  chunk holds as written is answered with nothing (a vector neighbour of an ID
  nobody wrote is noise);
* ``timeList``: a query that is only a time ("what did I do yesterday?") lists what
  is dated in it, newest day first, every result scoring 1;
* ``keyword``: BM25 candidates, from the daemon's in-memory postings
  (``keywords.py``) or FTS5, ``pool`` per source; score ``r / (1 + r)`` of the
  BM25 rank ``r``; equal scores by file and line (chunk ids differ between two
  builds of the same files);
* ``vector``: the query's nearest chunks, from the daemon's in-memory vectors or
  the store's, ``pool`` per source (the query is embedded on a pool thread from
  the start of the run, while the keyword side is searched).
"""

from __future__ import annotations

import time
from collections import Counter
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import replace
from typing import TYPE_CHECKING

from indexer.search.candidates import Candidate
from indexer.search.stages.base import Stage, bm25_to_score, by_score, classify, pool
from indexer.sources.redaction import redact
from indexer.store.records import KeywordQuery
from providers.errors import ProviderError, ProviderTimeout

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from indexer.search.stages.context import RunContext

__all__ = ["AbsentToken", "Keyword", "TimeList", "Vector"]


class AbsentToken(Stage):
    name = "absentToken"
    switch = False  # not a ranking rule: an answer that nothing is there

    def applies(self, ctx: RunContext) -> bool:
        q = ctx.q
        return not ctx.listing and bool(q.exact) and not (q.terms or q.required or q.cjk)

    def __call__(self, ctx: RunContext, hits: list[Candidate]) -> list[Candidate]:
        q = ctx.q
        phrases = tuple(p for p in q.exact_parts if p)
        if not phrases:
            return hits
        found = ctx.store.fts_search(KeywordQuery((), phrases), 200, ctx.wanted)
        if any(needle in row.text.lower() for row in found for needle in q.exact):
            return hits
        ctx.mode, ctx.fallback = "keyword", None
        ctx.stop(f"no memory contains {redact(q.exact[0])}")  # never echo a secret
        return []


class TimeList(Stage):
    name = "timeList"
    switch = False
    listing = True

    def applies(self, ctx: RunContext) -> bool:
        return ctx.listing

    def __call__(self, ctx: RunContext, hits: list[Candidate]) -> list[Candidate]:
        ctx.mode, ctx.fallback = "keyword", None
        found = ctx.scope.dated(ctx.rows, 4 * ctx.pool)
        return [Candidate(cid, source, 0.0, 1.0) for cid, source in found]


class Keyword(Stage):
    name = "keyword"
    switch = False

    def applies(self, ctx: RunContext) -> bool:
        return not ctx.listing and ctx.mode != "vector" and not ctx.q.empty

    def __call__(self, ctx: RunContext, hits: list[Candidate]) -> list[Candidate]:
        parts = ctx.parts()
        deep = ctx.pool * ctx.deeper
        in_memory = None
        snap, live = ctx.facts.snapshot, ctx.live
        if snap is not None and snap.keywords is not None and live is not None:
            in_memory = snap.keywords.search(live.tokens, ctx.q, deep, parts)
        out: list[Candidate] = []
        for n, part in enumerate(parts):
            out += self._part(ctx, part, deep, None if in_memory is None else in_memory[n])
        return self._ties_by_place(ctx, by_score(out))

    def _part(
        self,
        ctx: RunContext,
        sources: list[str] | None,
        deep: int,
        found: list[tuple[int, float, str]] | None,
    ) -> list[Candidate]:
        """The candidates of ``sources``; an exact token's holders are told apart
        here (their rows are read) when the query has one."""
        q, rows = ctx.q, ctx.rows
        if found is None:
            fts = ctx.store.fts_search(q.keyword, deep, sources)
            rows.add(fts)
            found = [(r.id, r.rank, r.source) for r in fts]
        if not q.needles:
            return [
                Candidate(
                    cid, src, rank, bm25_to_score(rank), bm25_to_score(rank), classified=False
                )
                for cid, rank, src in found
            ]
        rows.need([cid for cid, _, _ in found])
        out: list[Candidate] = []
        for cid, rank, src in found:
            row = rows.get(cid)
            if row is None:
                continue  # deleted since the postings were read
            exact, full, _ = classify(row, q)
            ts = bm25_to_score(rank)
            out.append(Candidate(cid, src, rank, ts, ts, exact, full))
        return out

    @staticmethod
    def _ties_by_place(ctx: RunContext, hits: list[Candidate]) -> list[Candidate]:
        """Equal scores (to 6 places) by file and line: the same files rank the same
        however often, and in what order, they were indexed."""
        counts = Counter(round(h.score, 6) for h in hits)
        tied = {h.id for h in hits if counts[round(h.score, 6)] > 1}
        if not tied:
            return hits
        ctx.rows.need(tied)
        out = sorted(hits, key=lambda h: (-round(h.score, 6), ctx.rows.place(h.id)))
        return [replace(h, score=round(h.score, 6)) if h.id in tied else h for h in out]


class Vector(Stage):
    name = "vector"
    switch = False

    def applies(self, ctx: RunContext) -> bool:
        return not ctx.listing and ctx.mode in ("hybrid", "vector")

    def prepare(self, ctx: RunContext) -> None:
        """The query is embedded on a pool thread (llama.cpp and HTTP release the GIL)
        while the keyword side is searched."""
        provider = ctx.provider
        assert provider is not None
        from providers.retry import RetryPolicy, call_with_retries

        query = ctx.text
        self_job: Future[npt.NDArray[np.float32]] = pool().submit(
            call_with_retries,
            lambda: provider.embed_query(query),
            RetryPolicy(attempts=2, initial=0.2, maximum=1.0),
        )
        ctx.embedding = (self_job, time.monotonic())

    def __call__(self, ctx: RunContext, hits: list[Candidate]) -> list[Candidate]:
        try:
            qvec = self._query_vector(ctx)
        except ProviderError as exc:
            vector_only = ctx.mode == "vector"
            ctx.mode = "keyword"
            ctx.fallback = f"query embedding failed ({exc.message}): keyword search only"
            # vector mode did not search the keywords: they are searched now, in its place
            return Keyword()(ctx, hits) if vector_only and not ctx.q.empty else hits
        from indexer.search.snapshot.vector_memory import stored_neighbours

        parts, deep, rows = ctx.parts(), ctx.pool * ctx.deeper, ctx.rows
        snap = ctx.facts.snapshot
        vec = None if snap is None else snap.vectors
        if vec is not None and vec.key == ctx.facts.versions[2]:  # never waits for a reload
            found = [hit for part in vec.search(qvec, deep, parts) for hit in part]
            ctx.near = [(cid, sim) for cid, sim, _ in found]
            ctx.near_sources = {cid: source for cid, _, source in found}
            return hits
        ctx.near = [
            hit for part in parts for hit in stored_neighbours(ctx.store, qvec, deep, part, rows)
        ]
        # fusion needs the source of the neighbours that are not keyword hits
        known = {c.id for c in hits}
        fresh = [cid for cid, _ in ctx.near if cid not in known]
        rows.need(fresh)
        ctx.near_sources = {cid: row.source for cid in fresh if (row := rows.get(cid)) is not None}
        return hits

    @staticmethod
    def _query_vector(ctx: RunContext) -> npt.NDArray[np.float32]:
        job, started = ctx.embedding
        limit_s = ctx.cfg.provider.remote.queryTimeoutMs / 1000
        try:
            got: npt.NDArray[np.float32] = job.result(
                timeout=max(0.0, started + limit_s - time.monotonic())
            )[0]
            return got
        except FutureTimeout as exc:
            raise ProviderTimeout(f"query embedding took longer than {limit_s:g}s") from exc
