"""Fusion: keyword candidates and vector neighbours merged into one ranking.

* ``queryWeight``: the vector side's weight for this query: ``hybrid.vectorWeight``'s
  share when one of the best ``WEIGHT_HITS`` keyword hits holds every word of the
  query, ``hybrid.vectorWeightWeak`` when none holds any (the question is worded
  unlike the memory that answers it: a paraphrase, where the keyword side ranks
  chance matches of its common words), linearly between.
* ``fusion`` (weighted, the default): ``wv * v + wt * t``, where ``t`` is a chunk's
  BM25 over the best BM25 among the keyword candidates and ``v`` its cosine min-max
  scaled over the vector candidates: both sides span 0..1 for every query. (The
  absolute scores do not: ``r/(1+r)`` of BM25 bunches every good keyword hit near
  0.95 while cosines spread over 0.2-0.8, so the vector side would decide the order;
  docs/RETRIEVAL.md.) ``rrf``: reciprocal rank fusion, ``sum 1 / (k + rank)``, scaled
  so a chunk ranked first by both lists scores 1. Vector only: the calibrated cosine.

The fused value only orders one query's candidates (the best is always near 1), so
the scores fusion gives are the fused values times one factor per query, chosen so
that the best candidate scores its own relevance (the stronger of its keyword score
and its calibrated cosine): a score says how well the best result matches, and the
others keep their distance from it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import TYPE_CHECKING

from indexer.search.candidates import Candidate, own_relevance
from indexer.search.stages.base import Stage, classify
from providers.calibration import calibrate

if TYPE_CHECKING:
    from indexer.search.stages.context import RunContext

__all__ = ["Fusion", "QueryWeight", "WEIGHT_HITS"]

WEIGHT_HITS = 3  # the best keyword hits queryWeight reads


class QueryWeight(Stage):
    name = "queryWeight"

    def applies(self, ctx: RunContext) -> bool:
        h = ctx.cfg.hybrid
        return ctx.mode == "hybrid" and h.fusion == "weighted" and h.vectorWeightWeak > ctx.weight

    def __call__(self, ctx: RunContext, hits: list[Candidate]) -> list[Candidate]:
        q = ctx.q
        n = len(q.stems) + len(q.cjk)
        if not hits or not n:
            return hits
        head = sorted(hits, key=lambda h: -h.text_score)[:WEIGHT_HITS]
        ctx.rows.need([h.id for h in head])
        held = max(
            (classify(r, q)[2] for h in head if (r := ctx.rows.get(h.id)) is not None), default=0
        )
        share = min(1.0, held / n)
        weak = ctx.cfg.hybrid.vectorWeightWeak
        ctx.weight, ctx.share = ctx.weight + (weak - ctx.weight) * (1.0 - share), share
        return hits


class Fusion(Stage):
    name = "fusion"
    switch = False

    def applies(self, ctx: RunContext) -> bool:
        return not ctx.listing and ctx.mode in ("hybrid", "vector")

    def __call__(self, ctx: RunContext, hits: list[Candidate]) -> list[Candidate]:
        vector_only = ctx.mode == "vector"
        h = ctx.cfg.hybrid
        rrf = h.fusion == "rrf" and not vector_only
        wv = 1.0 if vector_only else ctx.weight
        wt = 1.0 - wv
        near = sorted(ctx.near, key=lambda x: -x[1])
        by_id: dict[int, Candidate] = {c.id: c for c in hits}
        kw_rank = {c.id: n for n, c in enumerate(hits)}
        vec_rank: dict[int, int] = {}
        vec_sim: dict[int, float] = {}
        for n, (cid, sim) in enumerate(near):
            vec_rank[cid] = n
            vec_sim[cid] = max(0.0, min(1.0, sim))
            if cid not in by_id and cid in ctx.near_sources:
                # exact/full worked out later, only if the floor would drop it
                by_id[cid] = Candidate(cid, ctx.near_sources[cid], 0.0, 0.0, classified=False)
        best_rrf = 2.0 / (h.rrfK + 1)
        bm25 = {c.id: max(0.0, -c.rank) for c in hits}
        top_bm25 = max(bm25.values(), default=0.0) or 1.0
        sims = list(vec_sim.values())
        lo, hi = (min(sims), max(sims)) if sims else (0.0, 0.0)
        scale = ctx.facts.scale
        fused: list[tuple[float, Candidate]] = []
        for cid, c in by_id.items():
            v = vec_sim.get(cid)
            rel = None if v is None else calibrate(v, scale)
            if vector_only:
                key = rel or 0.0
                part: dict[str, object] = {"cosine": v}
            elif rrf:
                r = 0.0
                if cid in kw_rank:
                    r += 1.0 / (h.rrfK + kw_rank[cid] + 1)
                if cid in vec_rank:
                    r += 1.0 / (h.rrfK + vec_rank[cid] + 1)
                key = r / best_rrf
                part = {
                    "keywordRank": None if cid not in kw_rank else kw_rank[cid] + 1,
                    "vectorRank": None if cid not in vec_rank else vec_rank[cid] + 1,
                }
            else:
                t = bm25.get(cid, 0.0) / top_bm25
                scaled = 0.0 if v is None else (v - lo) / (hi - lo) if hi > lo else 1.0
                key = wv * scaled + wt * t
                part = {"keywordScaled": round(t, 4), "vectorScaled": round(scaled, 4)}
            part["fused"] = round(key, 4)
            fused.append((key, c.with_part(self.name, part, vector_score=v, vector_relevance=rel)))
        pos = {cid: n for n, cid in enumerate(by_id)}
        fused.sort(key=lambda x: (-x[0], pos[x[1].id]))
        fused = self._ties_by_place(ctx, fused)
        if not fused:
            return []
        top_key, top = fused[0]
        factor = own_relevance(top) / top_key if top_key > 0 else 0.0
        ctx.scale = factor
        return [replace(c, score=key * factor) for key, c in fused]

    @staticmethod
    def _ties_by_place(
        ctx: RunContext, fused: list[tuple[float, Candidate]]
    ) -> list[tuple[float, Candidate]]:
        """Equal fused values (to 6 places: float32 cosines of the same text differ
        below that) by file and line, not by chunk id, which differs between two
        builds of the same files; the rest as they are."""
        counts = Counter(round(k, 6) for k, _ in fused)
        tied = [c.id for k, c in fused if counts[round(k, 6)] > 1]
        if not tied:
            return fused
        ctx.rows.need(tied)
        out = sorted(fused, key=lambda x: (-round(x[0], 6), ctx.rows.place(x[1].id)))
        return [(round(k, 6), c) if counts[round(k, 6)] > 1 else (k, c) for k, c in out]
