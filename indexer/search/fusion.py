"""Fusion: keyword candidates and vector neighbours merged into one ranking."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace

from indexer.search.candidates import Candidate, ChunkRows
from indexer.search.keyword_hits import boosted_bm25, classify
from indexer.search.query import ParsedQuery
from providers.calibration import Scale, calibrate

__all__ = ["fuse", "fuse_for_query", "vector_weight"]

WEIGHT_HITS = 3  # the best keyword hits vector_weight reads


def vector_weight(
    q: ParsedQuery, keyword: Sequence[Candidate], rows: ChunkRows, base: float, weak: float
) -> tuple[float, float | None]:
    """The vector side's weight for this query, and the share of its words that the
    best keyword hits hold (None: not worked out, as when ``weak`` is not above
    ``base`` or no keyword hit was found): ``base`` when one of the best ``WEIGHT_HITS`` holds every
    word, ``weak`` when none holds any (the question is worded unlike the memory that
    answers it: a paraphrase, where the keyword side ranks chance matches of its
    common words), linearly between. With ``weak`` 0.5 against one fixed weight of 0.3:
    R@6 0.836 -> 0.885 on the personal dev set, SciFact nDCG@10 0.739 -> 0.744,
    LoCoMo R@10 0.910 -> 0.911 (docs/RETRIEVAL.md, "A weight per query")."""
    n = len(q.stems) + len(q.cjk)
    if not keyword or not n or weak <= base:
        return base, None
    head = sorted(keyword, key=lambda h: -h.text_score)[:WEIGHT_HITS]
    rows.need([h.id for h in head])
    held = max((classify(r, q)[2] for h in head if (r := rows.get(h.id)) is not None), default=0)
    share = min(1.0, held / n)
    return base + (weak - base) * (1.0 - share), share


def fuse(
    q: ParsedQuery,
    keyword: Sequence[Candidate],
    vector: Sequence[tuple[int, float]],
    vector_sources: Mapping[int, str],
    rows: ChunkRows,
    *,
    min_score: float,
    fusion: str,
    vector_weight: float,
    text_weight: float,
    rrf_k: int,
    scale: Scale | None = None,
) -> list[Candidate]:
    """Merge keyword candidates and vector neighbours into one ranking.

    ``weighted``: ``wv * v + wt * t`` with the weights normalised to sum to 1, where
    ``t`` is a chunk's BM25 over the best BM25 among the keyword candidates and ``v``
    its cosine min-max scaled over the vector candidates: both sides span 0..1 for
    every query. (The absolute scores do not: ``r/(1+r)`` of BM25 bunches every
    good keyword hit near 0.95 while cosines spread over 0.2-0.8, so the vector
    side would decide the order; docs/RETRIEVAL.md, "Choices measured".) ``rrf``: reciprocal
    rank fusion,
    ``sum 1 / (k + rank)``, scaled so a chunk ranked first by both lists scores 1.

    ``vector_sources``: the source of each neighbour that still exists (one that
    does not is ranked among the neighbours but never becomes a candidate).

    The fused score only orders results within one query (``fusedScore``). Each
    hit's ``score`` (``shown``) is its own relevance, ``max(cosine, keyword
    score)``, and that is what ``min_score`` judges: a hit is kept when either side
    reaches it (so neither a strong paraphrase nor a strong keyword hit is lost to
    the weighting), and always when it holds an exact token/phrase or every query
    word, then shown at ``min_score``; only those below the floor have their text
    read for that."""
    total = (vector_weight + text_weight) or 1.0
    wv, wt = vector_weight / total, text_weight / total
    by_id: dict[int, Candidate] = {h.id: h for h in keyword}
    kw_rank = {h.id: n for n, h in enumerate(keyword)}
    vec_rank: dict[int, int] = {}
    vec_sim: dict[int, float] = {}
    for n, (cid, sim) in enumerate(vector):
        vec_rank[cid] = n
        vec_sim[cid] = max(0.0, min(1.0, sim))
        if cid not in by_id and cid in vector_sources:
            # Classified below, only if the floor would drop it (saves scanning the
            # text of every neighbour; a chunk holding the exact token is almost
            # always a keyword hit already).
            by_id[cid] = Candidate(cid, vector_sources[cid], 0.0, 0.0, classified=False)
    best_rrf = 2.0 / (rrf_k + 1)
    bm25 = {h.id: boosted_bm25(h.rank, h.exact) for h in keyword}
    top_bm25 = max(bm25.values(), default=0.0) or 1.0
    sims = [max(0.0, min(1.0, s)) for _, s in vector]
    lo, hi = (min(sims), max(sims)) if sims else (0.0, 0.0)
    out: list[Candidate] = []
    weak: list[Candidate] = []
    for cid, hit in by_id.items():
        v = vec_sim.get(cid)
        t = scaled = None
        ranks = None
        if fusion == "rrf":
            r = 0.0
            if cid in kw_rank:
                r += 1.0 / (rrf_k + kw_rank[cid] + 1)
            if cid in vec_rank:
                r += 1.0 / (rrf_k + vec_rank[cid] + 1)
            score = r / best_rrf
            ranks = (kw_rank.get(cid), vec_rank.get(cid))
        else:
            t = bm25.get(cid, 0.0) / top_bm25
            scaled = 0.0 if v is None else (v - lo) / (hi - lo) if hi > lo else 1.0
            score = wv * scaled + wt * t
        # Its own relevance: the stronger of its cosine (on the one scale of every
        # model: ``scale``) and its keyword score (any weighted mix lies between them).
        rel = None if v is None else calibrate(v, scale)
        shown = max(rel or 0.0, hit.text_score)
        fused = replace(
            hit,
            score=score,
            vector_score=v,
            vector_relevance=rel,
            shown=shown,
            fused=True,
            text_scaled=t,
            vector_scaled=scaled,
            ranks=ranks,
        )
        (out if shown >= min_score else weak).append(fused)
    # Below the floor: kept only if it holds an exact token/phrase or every word.
    rows.need([h.id for h in weak if not h.classified])
    for hit in weak:
        if not hit.classified:
            row = rows.get(hit.id)
            if row is None:
                continue
            exact, full, _ = classify(row, q)
            hit = replace(hit, exact=exact, full=full, classified=True)
        if hit.exact or hit.full:
            out.append(replace(hit, shown=min_score))  # kept for its words: at the floor
    pos = {cid: n for n, cid in enumerate(by_id)}
    out.sort(key=lambda h: (-h.score, pos[h.id]))
    return _ties_by_place(out, rows)


def fuse_for_query(
    q: ParsedQuery,
    keyword: Sequence[Candidate],
    vector: Sequence[tuple[int, float]],
    vector_sources: Mapping[int, str],
    rows: ChunkRows,
    *,
    min_score: float,
    fusion: str,
    base: float,
    weak: float,
    rrf_k: int,
    scale: Scale | None,
    vector_only: bool,
) -> tuple[list[Candidate], float, float | None]:
    """``fuse`` with this query's weight (``vector_weight`` for weighted fusion, 1.0
    for a vector-only search): (the fused hits, the vector weight, the share of the
    query's words the best keyword hits hold, or None)."""
    weight, share = 1.0, None
    if not vector_only:
        weight = base
        if fusion == "weighted":
            weight, share = vector_weight(q, keyword, rows, base, weak)
    hits = fuse(
        q,
        keyword,
        sorted(vector, key=lambda x: -x[1]),
        vector_sources,
        rows,
        min_score=min_score,
        fusion="weighted" if vector_only else fusion,
        vector_weight=weight,
        text_weight=1.0 - weight,
        rrf_k=rrf_k,
        scale=scale,
    )
    return hits, weight, share


def _ties_by_place(hits: list[Candidate], rows: ChunkRows) -> list[Candidate]:
    """Hits of equal score (to 6 places: float32 cosines of the same text differ
    below that) by file and line, not by chunk id, which differs between two builds
    of the same files; the rest as they are."""
    counts = Counter(round(h.score, 6) for h in hits)
    tied = [h.id for h in hits if counts[round(h.score, 6)] > 1]
    if not tied:
        return hits
    rows.need(tied)
    return sorted(hits, key=lambda h: (-round(h.score, 6), rows.place(h.id)))
