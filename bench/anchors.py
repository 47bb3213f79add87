"""The peers' query logic run over memindex's own index, for side-by-side scoring.

Same chunks, same FTS5 table (porter unicode61), same vectors and query embeddings
as memindex; only the query side follows the anchor (../shared/design/ANCHORS.md):

* OpenClaw memory-core: every ``[\\p{L}\\p{N}_]+`` token quoted and AND-joined, BM25 over
  the chunk text only, ``textScore = r / (1 + r)``; candidates
  ``min(200, maxResults * 4)`` per side; hybrid ``0.7 * cosine + 0.3 * textScore``;
  ``score >= minScore (0.35)`` then ``maxResults``; the citation is the whole chunk
  (its snippet is the first 700 characters, never narrowed to the match).
* QMD keyword search (``qmd search``): each term becomes the prefix query
  ``"term"*``, AND-joined; BM25 column weights path 1.5, title 4, body 1; no floor.

A result is ``(path, start_line, end_line)``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from indexer.engine import AgentIndex
from indexer.errors import StoreError
from indexer.search.stages.base import bm25_to_score

__all__ = ["openclaw_search", "qmd_search"]

_TOKEN = re.compile(r"\w+")
Result = tuple[str, int, int]


def _tokens(query: str) -> list[str]:
    return [t for t in _TOKEN.findall(query) if t.replace("_", "")]


def _quote(tok: str) -> str:
    return '"' + tok.replace('"', '""') + '"'


def _fts(
    idx: AgentIndex,
    match: str,
    limit: int,
    sources: Sequence[str] | None,
    weights: tuple[float, float, float],
) -> list[tuple[int, float, Result]]:
    try:
        rows = idx.store.fts_match(match, limit, sources, weights, fts5_idf=True)
    except StoreError:
        return []
    return [(r.id, bm25_to_score(r.rank), (r.path, r.start_line, r.end_line)) for r in rows]


def openclaw_search(
    idx: AgentIndex,
    query: str,
    *,
    limit: int,
    sources: Sequence[str] | None,
    hybrid: bool,
    min_score: float = 0.35,
    vector_weight: float = 0.7,
    text_weight: float = 0.3,
) -> list[Result]:
    cand = min(200, max(1, limit * 4))
    toks = _tokens(query)
    kw = []
    if toks:
        match = "{body} : (" + " AND ".join(_quote(t) for t in toks) + ")"
        kw = _fts(idx, match, cand, sources, (1.0, 0.0, 0.0))
    scored: dict[int, tuple[float, Result]] = {}
    if not hybrid:
        for cid, ts, res in kw:
            scored[cid] = (ts, res)
    else:
        assert idx.provider is not None and idx.live is not None
        qvec = idx.provider.embed_query(query)[0]
        idx.live.wait_ready(idx.store)
        snap = idx.live.snapshot
        assert snap is not None and snap.vectors is not None
        near = snap.vectors.search(qvec, cand, [list(sources) if sources else None])[0]
        rows = idx.store.chunk_rows([cid for cid, _, _ in near])
        text = {cid: (ts, res) for cid, ts, res in kw}
        for cid, sim, _ in near:
            if cid in rows:
                r = rows[cid]
                ts = text.get(cid, (0.0, None))[0]
                scored[cid] = (
                    vector_weight * sim + text_weight * ts,
                    (r.path, r.start_line, r.end_line),
                )
        for cid, (ts, res) in text.items():
            if cid not in scored:
                scored[cid] = (text_weight * ts, res)
    ranked = sorted(scored.values(), key=lambda x: -x[0])
    return [res for score, res in ranked if score >= min_score][:limit]


def qmd_search(
    idx: AgentIndex, query: str, *, limit: int, sources: Sequence[str] | None
) -> list[Result]:
    toks = [t.lower() for t in _tokens(query)]
    if not toks:
        return []
    match = " AND ".join(_quote(t) + "*" for t in toks)
    return [res for _, _, res in _fts(idx, match, limit, sources, (1.0, 4.0, 1.5))]
