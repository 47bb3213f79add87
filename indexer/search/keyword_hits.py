"""Keyword candidates: the chunks FTS5 (or the daemon's in-memory postings,
keywords.py) finds for a query, scored and filtered.

Scores: FTS5's bm25() is negative (lower is better); with ``r = -rank`` the keyword
score is ``r / (1 + r)``: 0 for nothing, approaching 1 for strong hits, monotonic.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

from indexer.search.candidates import Candidate, ChunkRows
from indexer.search.query import ParsedQuery
from indexer.search.snippets import has_word_with_prefix
from indexer.store import SearchRow
from indexer.store.base import KeywordIndex

__all__ = ["EXACT_BOOST", "bm25_to_score", "boosted_bm25", "classify", "keyword_search"]

# An exact token/phrase hit ranks as if its BM25 were this much stronger, rather than
# first of all: a common "exact" token (a claim's "IL-6") is held by many weak chunks,
# while a rare ID wins on BM25 anyway (docs/RETRIEVAL.md).
EXACT_BOOST = 0.25
# A question with an exact token and at most this many other words is anchored on it.
ANCHOR_WORDS = 2


def boosted_bm25(rank: float, exact: bool) -> float:
    """FTS5's bm25 rank as a positive strength, boosted for an exact hit."""
    r = max(0.0, -rank)
    return r * (1.0 + EXACT_BOOST) if exact else r


def bm25_to_score(rank: float) -> float:
    """FTS5 bm25 (negative, lower is better) -> 0..1, higher is better."""
    r = max(0.0, -rank)
    return r / (1.0 + r)


def classify(row: SearchRow, q: ParsedQuery) -> tuple[bool, bool, int]:
    """(exact hit, full match, distinct query words present) for a candidate chunk."""
    low = row.text.lower()
    needles = q.needles
    exact = any(n in low for n in needles)
    stems = q.stems
    present = sum(1 for p in stems if has_word_with_prefix(low, p))
    cjk = sum(1 for g in q.cjk if g in low)
    full = present == len(stems) and cjk == len(q.cjk) and all(n in low for n in needles)
    return exact, full, present + cjk


def _below_anchor(h: Candidate) -> Candidate:
    """``h`` ranked after the chunks holding the query's exact token; the score it
    shows (and ``minScore`` judges) stays its own."""
    return replace(h, score=h.score - 1.0, shown=h.score if h.shown is None else h.shown)


def keyword_search(
    store: KeywordIndex,
    q: ParsedQuery,
    rows: ChunkRows,
    *,
    limit: int,
    min_score: float,
    sources: Sequence[str] | None = None,
    candidates: int | None = None,
    found: Sequence[tuple[int, float, str]] | None = None,
    break_ties: bool = True,
) -> list[Candidate]:
    """Keyword candidates from a pool of ``candidates``, exact hits first, filtered by
    ``min_score``; ``render_results`` picks the best ``limit`` distinct ones.

    A chunk that contains an exact token/phrase, or every query term, is never
    dropped by ``min_score``: the filter is for weak partial matches only.

    ``found``: the candidates, ranked, from the in-memory postings (keywords.py) as
    ``(id, rank, source)``; None: FTS5 finds them (and returns their rows, kept in
    ``rows``). ``break_ties``: order equal scores by the query words each chunk holds
    (reads their text; weighted fusion has no use for it)."""
    if q.empty:
        return []
    pool = candidates if candidates is not None else max(limit * 4, limit)
    if found is None:
        fts = store.fts_search(q.keyword, pool, sources)
        rows.add(fts)
        found = [(r.id, r.rank, r.source) for r in fts]
    hits: list[Candidate] = []
    coord: dict[int, int] = {}
    literal = bool(q.needles)
    scored = [(cid, rank, source, bm25_to_score(rank)) for cid, rank, source in found]
    # Rows are read now only for the candidates whose text is looked at below.
    rows.need([cid for cid, _, _, ts in scored if literal or ts < min_score])
    for cid, rank, source, ts in scored:
        if not literal and ts >= min_score:
            # No literal to find and above the floor: the text scan can wait (it
            # only breaks ties below, or tells fuse() about a full match).
            hits.append(Candidate(cid, source, rank, ts, ts, classified=False))
            continue
        row = rows.get(cid)
        if row is None:
            continue  # deleted since the postings were read
        exact, full, present = classify(row, q)
        if exact:
            ts = bm25_to_score(-boosted_bm25(rank, exact))
        if ts < min_score and not (exact or full):
            continue
        coord[cid] = present
        # Kept below the floor only for holding an exact token or every word: it
        # ranks after the hits that reach the floor and is shown at the floor.
        shown = None if ts >= min_score else min_score
        hits.append(Candidate(cid, source, rank, ts, ts, exact, full, shown=shown))
    # A short question around an exact token ("who's handling OPS-2304?"): the token
    # is its anchor, so a chunk holding it ranks above every chunk that only holds
    # another word ("GitHub handle" for "handling"). A longer one (a claim naming
    # "IL-6" among ten words) ranks on all its words.
    if q.exact and len(q.terms) <= ANCHOR_WORDS:
        # ranked below every chunk holding the token (its ranking key, not its score)
        hits = [h if h.exact else _below_anchor(h) for h in hits]
    if not break_ties:
        hits.sort(key=lambda h: -h.score)
        return hits
    # By score; equal scores (chunks of the same length holding the same query word as
    # often, common in small workspaces) by query words present.
    rounded = {h.id: round(h.score, 6) for h in hits}
    counts = Counter(rounded.values())
    untold = [h.id for h in hits if h.id not in coord and counts[rounded[h.id]] > 1]
    if untold:  # with the rows the results will likely show: one read, not two
        head = sorted(hits, key=lambda h: -h.score)[: 2 * limit]
        rows.need([*untold, *(h.id for h in head)])
    for h in hits:
        if h.id not in coord:
            tied = counts[rounded[h.id]] > 1
            row = rows.get(h.id)
            coord[h.id] = classify(row, q)[2] if tied and row is not None else 0
    # Then by file and line, so that the same files rank the same however often (and
    # in what order) they were indexed: chunk ids differ between two builds.
    untied = ("", 0)
    hits.sort(
        key=lambda h: (
            -rounded[h.id],
            -coord[h.id],
            rows.place(h.id) if counts[rounded[h.id]] > 1 else untied,
        )
    )
    return hits
