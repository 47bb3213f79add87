"""Keyword candidates, fusion with vector neighbours and result objects (the query
itself is parsed by ``query.py``, snippets are cut by ``snippets.py``).

Scores: FTS5's bm25() is negative (lower is better); with ``r = -rank`` the keyword
score is ``r / (1 + r)``: 0 for nothing, approaching 1 for strong hits, monotonic.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from indexer.api import SearchResult
from indexer.search.candidates import Candidate, ChunkRows
from indexer.search.query import ParsedQuery, parse_query
from indexer.search.snippets import has_word_with_prefix, make_snippet
from indexer.store import IndexStore, SearchRow

__all__ = [
    "bm25_to_score",
    "explain_parts",
    "fuse",
    "keyword_search",
    "render_results",
    "to_result",
]

# An exact token/phrase hit ranks as if its BM25 were this much stronger. Putting
# every exact hit first cost 0.03 nDCG@10 on SciFact-dev (claims such as "IL-6 ..."
# matched by many weak chunks); a rare ID wins on BM25 anyway. See docs/RETRIEVAL.md.
EXACT_BOOST = 0.25


def boosted_bm25(rank: float, exact: bool) -> float:
    """FTS5's bm25 rank as a positive strength, boosted for an exact hit."""
    r = max(0.0, -rank)
    return r * (1.0 + EXACT_BOOST) if exact else r


def bm25_to_score(rank: float) -> float:
    """FTS5 bm25 (negative, lower is better) -> 0..1, higher is better."""
    r = max(0.0, -rank)
    return r / (1.0 + r)


def _citation(path: str, start: int, end: int) -> str:
    return f"{path}#L{start}" + (f"-L{end}" if end != start else "")


def explain_parts(c: Candidate) -> dict[str, Any]:
    """Why candidate ``c`` ranks where it does: each stage's part of its score
    (``explain: true``). Parts a stage did not compute are left out."""
    parts: dict[str, Any] = {
        "bm25": round(max(0.0, -c.rank), 4),
        "exact": c.exact,
        "allWords": c.full,
        "exactBoost": 1.0 + EXACT_BOOST if c.exact else 1.0,
        "keywordScore": round(c.text_score, 4),
    }
    if c.vector_score is not None:
        parts["cosine"] = round(c.vector_score, 4)
    if c.text_scaled is not None:
        parts["keywordScaled"] = round(c.text_scaled, 4)
    if c.vector_scaled is not None:
        parts["vectorScaled"] = round(c.vector_scaled, 4)
    if c.ranks is not None:
        parts["keywordRank"] = None if c.ranks[0] is None else c.ranks[0] + 1
        parts["vectorRank"] = None if c.ranks[1] is None else c.ranks[1] + 1
    if c.fused:
        fused = c.before_rerank if c.before_rerank is not None else c.score
        parts["fused"] = round(fused / (c.decay or 1.0) / (c.dated or 1.0), 4)
    if c.decay is not None:
        parts["decay"] = round(c.decay, 4)
    if c.dated is not None:
        parts["dateBoost"] = round(c.dated, 4)
    if c.rerank is not None:
        parts["rerank"] = round(c.rerank, 4)
    if c.shown is not None and c.shown > max(c.text_score, c.vector_score or 0.0):
        parts["keptAtFloor"] = "exact token or phrase" if c.exact else "every query word"
    parts["rankKey"] = round(c.score, 4)
    return parts


def to_result(
    c: Candidate, row: SearchRow, q: ParsedQuery, max_chars: int, explain: bool = False
) -> tuple[SearchResult, int]:
    """The result object of candidate ``c``, whose chunk is ``row``, and the line its
    snippet is centred on; ``explain``: with its score parts."""
    snippet, s0, s1, best = make_snippet(row.text, 0, q, max_chars)
    # Text lines -> the file's lines (a transcript chunk skips malformed and noise lines).
    s0, s1, best = row.file_line(s0), row.file_line(s1), row.file_line(best)
    out: SearchResult = {
        "path": row.path,
        "startLine": row.start_line,
        "endLine": row.end_line,
        "score": round(c.score if c.shown is None else c.shown, 4),
        "snippet": snippet,
        "source": row.source,
        "citation": _citation(row.path, row.start_line, row.end_line),
        "snippetStartLine": s0,
        "snippetEndLine": s1,
        "heading": row.heading,
        "textScore": round(c.text_score, 4),
    }
    if c.vector_score is not None:
        out["vectorScore"] = round(c.vector_score, 4)
    if c.fused:
        out["fusedScore"] = round(c.score, 4)
    if explain:
        out["explain"] = explain_parts(c)
    return out, best


def _classify(row: SearchRow, q: ParsedQuery) -> tuple[bool, bool, int]:
    """(exact hit, full match, distinct query words present) for a candidate chunk."""
    low = row.text.lower()
    needles = q.literal_needles()
    exact = any(n in low for n in needles)
    stems = q.word_stems()
    present = sum(1 for p in stems if has_word_with_prefix(low, p))
    cjk = sum(1 for g in q.cjk if g in low)
    full = present == len(stems) and cjk == len(q.cjk) and all(n in low for n in needles)
    return exact, full, present + cjk


def keyword_search(
    store: IndexStore,
    query: str | ParsedQuery,
    rows: ChunkRows,
    *,
    limit: int,
    min_score: float,
    sources: Sequence[str] | None = None,
    candidates: int | None = None,
    found: Sequence[tuple[int, float, str]] | None = None,
    break_ties: bool = True,
) -> tuple[ParsedQuery, list[Candidate]]:
    """Keyword candidates from a pool of ``candidates``, exact hits first, filtered by
    ``min_score``; ``render_results`` picks the best ``limit`` distinct ones.

    A chunk that contains an exact token/phrase, or every query term, is never
    dropped by ``min_score``: the filter is for weak partial matches only.

    ``found``: the candidates, ranked, from the in-memory postings (keywords.py) as
    ``(id, rank, source)``; None: FTS5 finds them (and returns their rows, kept in
    ``rows``). ``break_ties``: order equal scores by the query words each chunk holds
    (reads their text; weighted fusion has no use for it)."""
    q = query if isinstance(query, ParsedQuery) else parse_query(query)
    if q.empty():
        return q, []
    pool = candidates if candidates is not None else max(limit * 4, limit)
    if found is None:
        fts = store.fts_search(q.keyword_query(), pool, sources)
        rows.add(fts)
        found = [(r.id, r.rank, r.source) for r in fts]
    hits: list[Candidate] = []
    coord: dict[int, int] = {}
    literal = bool(q.literal_needles())
    scored = [(cid, rank, source, bm25_to_score(rank)) for cid, rank, source in found]
    # Rows are read now only for the candidates whose text is looked at below.
    rows.need(cid for cid, _, _, ts in scored if literal or ts < min_score)
    for cid, rank, source, ts in scored:
        if not literal and ts >= min_score:
            # No literal to find and above the floor: the text scan can wait (it
            # only breaks ties below, or tells fuse() about a full match).
            hits.append(Candidate(cid, source, rank, ts, ts, classified=False))
            continue
        row = rows.get(cid)
        if row is None:
            continue  # deleted since the postings were read
        exact, full, present = _classify(row, q)
        if exact:
            ts = bm25_to_score(-boosted_bm25(rank, exact))
        if ts < min_score and not (exact or full):
            continue
        coord[cid] = present
        # Kept below the floor only for holding an exact token or every word: it
        # ranks after the hits that reach the floor and is shown at the floor.
        shown = None if ts >= min_score else min_score
        hits.append(Candidate(cid, source, rank, ts, ts, exact, full, shown=shown))
    if not break_ties:
        hits.sort(key=lambda h: -h.score)
        return q, hits
    # By score; equal scores (FTS5 gives every term in half the chunks or more an IDF
    # of ~0, common in small workspaces) by query words present.
    rounded = {h.id: round(h.score, 6) for h in hits}
    counts = Counter(rounded.values())
    rows.need(h.id for h in hits if h.id not in coord and counts[rounded[h.id]] > 1)
    for h in hits:
        if h.id not in coord:
            tied = counts[rounded[h.id]] > 1
            row = rows.get(h.id)
            coord[h.id] = _classify(row, q)[2] if tied and row is not None else 0
    hits.sort(key=lambda h: (-rounded[h.id], -coord[h.id]))
    return q, hits


# Two chunks from different sources hold the same memory when the line a hit matched
# in one is in the other: ``SAME_SHARE`` of that line's ``SHINGLE``-word runs occur
# in the other chunk. A daily-log line and the transcript line it came from differ
# in their prefixes ("- [D1:3] 13:56 **Caroline**:" against "User (Caroline):"),
# not in their words. Lines of fewer words are not compared (too little to tell).
SHINGLE = 5
SAME_SHARE = 0.6
_WORD = re.compile(r"\w+")


def _shingles(text: str) -> set[tuple[str, ...]]:
    words = _WORD.findall(text.lower())
    return {tuple(words[i : i + SHINGLE]) for i in range(len(words) - SHINGLE + 1)}


def _line(row: SearchRow, absolute: int) -> str:
    lines = row.text.split("\n")
    i = row.text_line(absolute)
    return lines[i] if 0 <= i < len(lines) else ""


def render_results(
    hits: Sequence[Candidate],
    q: ParsedQuery,
    limit: int,
    max_chars: int,
    rows: ChunkRows,
    *,
    explain: bool = False,
    merge_sources: bool = False,
) -> list[SearchResult]:
    """Result objects for the best ``limit`` candidates, one per location. A hit whose
    best line is already shown by a better hit's snippet in the same file
    (overlapping chunks matching in their shared lines) is merged into that result:
    the line range (and citation) grows to cover both chunks, and no snippet is
    repeated.

    ``merge_sources`` (both sources searched): a hit whose best line is held by a
    better result from the other source is the same memory (a daily-log line and
    the transcript line it was written from): it is merged into that result as an
    ``also`` citation instead of taking a slot of its own.

    Rows not read yet are read ``limit`` at a time as they come up; a candidate whose
    chunk no longer exists is skipped."""
    out: list[SearchResult] = []
    taken: dict[str, list[SearchResult]] = {}
    # Shown results with their chunk's word runs (worked out when first compared).
    other: list[tuple[SearchResult, SearchRow]] = []
    runs: dict[int, set[tuple[str, ...]]] = {}
    for n, h in enumerate(hits):
        if not rows.has(h.id):
            rows.need(x.id for x in hits[n : n + limit])
        row = rows.get(h.id)
        if row is None:
            continue
        r, best_line = to_result(h, row, q, max_chars, explain)
        shown = taken.setdefault(r["path"], [])
        same = next(
            (o for o in shown if o["snippetStartLine"] <= best_line <= o["snippetEndLine"]), None
        )
        if same is not None:
            if r["startLine"] <= same["endLine"] + 1 and same["startLine"] <= r["endLine"] + 1:
                same["startLine"] = min(same["startLine"], r["startLine"])
                same["endLine"] = max(same["endLine"], r["endLine"])
                same["citation"] = _citation(r["path"], same["startLine"], same["endLine"])
            continue
        if merge_sources and (twin := _same_memory(r, row, best_line, other, runs)) is not None:
            twin.setdefault("also", []).append(
                {
                    "path": r["path"],
                    "startLine": r["startLine"],
                    "endLine": r["endLine"],
                    "source": r["source"],
                    "citation": r["citation"],
                }
            )
            continue
        shown.append(r)
        out.append(r)
        if merge_sources:
            other.append((r, row))
        if len(out) >= limit:
            break
    return out


def _same_memory(
    r: SearchResult,
    row: SearchRow,
    best_line: int,
    shown: Sequence[tuple[SearchResult, SearchRow]],
    runs: dict[int, set[tuple[str, ...]]],
) -> SearchResult | None:
    """The shown result from another source whose chunk holds ``row``'s best line."""
    line = _shingles(_line(row, best_line))
    if not line:
        return None
    need = SAME_SHARE * len(line)
    for o, orow in shown:
        if o["source"] == r["source"]:
            continue
        if orow.id not in runs:
            runs[orow.id] = _shingles(orow.text)
        if len(line & runs[orow.id]) >= need:
            return o
    return None


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
) -> list[Candidate]:
    """Merge keyword candidates and vector neighbours into one ranking.

    ``weighted``: ``wv * v + wt * t`` with the weights normalised to sum to 1, where
    ``t`` is a chunk's BM25 over the best BM25 among the keyword candidates and ``v``
    its cosine min-max scaled over the vector candidates: both sides span 0..1 for
    every query. (The absolute scores do not: ``r/(1+r)`` of BM25 bunches every
    good keyword hit near 0.95 while cosines spread over 0.2-0.8, so the vector
    side decided the order; scaling raised SciFact-dev nDCG@10 from 0.694 to 0.725
    and LoCoMo-dev recall@10 from 0.873 to 0.879.) ``rrf``: reciprocal rank fusion,
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
        # Its own relevance: the stronger of its cosine and its keyword score (any
        # weighted mix of the two lies between them).
        shown = max(v or 0.0, hit.text_score)
        fused = replace(
            hit,
            score=score,
            vector_score=v,
            shown=shown,
            fused=True,
            text_scaled=t,
            vector_scaled=scaled,
            ranks=ranks,
        )
        (out if shown >= min_score else weak).append(fused)
    # Below the floor: kept only if it holds an exact token/phrase or every word.
    rows.need(h.id for h in weak if not h.classified)
    for hit in weak:
        if not hit.classified:
            row = rows.get(hit.id)
            if row is None:
                continue
            exact, full, _ = _classify(row, q)
            hit = replace(hit, exact=exact, full=full, classified=True)
        if hit.exact or hit.full:
            out.append(replace(hit, shown=min_score))  # kept for its words: at the floor
    pos = {cid: n for n, cid in enumerate(by_id)}  # ties keep the candidates' order
    out.sort(key=lambda h: (-h.score, pos[h.id]))
    return out
