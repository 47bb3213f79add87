"""Stages after fusion: temporal decay, source balance, MMR diversity. Pure.

* Temporal decay (off by default): a dated daily log ``memory/YYYY-MM-DD*.md`` loses
  half its score every ``halfLifeDays``; MEMORY.md, undated files and transcripts
  never decay, and neither does an exact hit (an ID written 119 days ago is still
  what the user asked for).
* Source balance: when both sources are searched, memory files keep up to
  ``memoryShare`` of the result slots against transcripts, as long as they have hits
  that passed ``minScore`` (the larger session corpus must not crowd them out).
* MMR (off by default): greedy ``lambda * relevance - (1 - lambda) * similarity`` to
  the results already chosen, similarity being the Jaccard overlap of word sets;
  exact hits keep their places at the top.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, date, datetime

from indexer.search.candidates import Candidate, ChunkRows

__all__ = ["apply_decay", "balance_sources", "mmr", "path_date"]

_DATED = re.compile(r"(?:^|/)memory/(?:.*/)?(\d{4})-(\d{2})-(\d{2})[^/]*\.md$")
_WORDS = re.compile(r"[a-z0-9_]+")


def path_date(path: str) -> date | None:
    """The date of a dated daily log (memory/2026-11-21.md), else None."""
    m = _DATED.search(path)
    if not m:
        return None
    try:
        return date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:
        return None


def apply_decay(
    hits: Sequence[Candidate], rows: ChunkRows, half_life_days: float, today: date | None = None
) -> list[Candidate]:
    """The candidates with dated daily logs' scores scaled by their age, re-sorted."""
    today = today or datetime.now(UTC).date()
    rate = math.log(2) / max(half_life_days, 1e-6)
    rows.need(h.id for h in hits if not h.exact and h.source == "memory")
    out: list[Candidate] = []
    for h in hits:
        row = None if h.exact or h.source != "memory" else rows.get(h.id)
        d = None if row is None else path_date(row.path)
        if d is not None:
            age = max(0, (today - d).days)
            h = replace(h, score=h.score * math.exp(-rate * age))
        out.append(h)
    out.sort(key=lambda h: -h.score)
    return out


def balance_sources(hits: Sequence[Candidate], limit: int, memory_share: float) -> list[Candidate]:
    """Best ``limit`` hits with up to ``memory_share`` of them from memory files when
    enough memory hits exist; order stays by score."""
    want = min(limit, math.ceil(limit * memory_share))
    chosen = list(hits[:limit])
    have = sum(1 for h in chosen if h.source == "memory")
    if have >= want:
        return list(hits)
    # Candidates by identity (they compare by identity too: cheap).
    taken = {id(h) for h in chosen}
    extra = [h for h in hits if h.source == "memory" and id(h) not in taken][: want - have]
    if not extra:
        return list(hits)
    # Replace the weakest non-memory picks, then keep the rest in score order.
    drop = {id(h) for h in [h for h in reversed(chosen) if h.source != "memory"][: len(extra)]}
    picked = [h for h in chosen if id(h) not in drop] + extra
    picked.sort(key=lambda h: -h.score)
    kept = {id(h) for h in picked}
    return picked + [h for h in hits if id(h) not in kept]


def mmr(
    hits: Sequence[Candidate], rows: ChunkRows, limit: int, lam: float = 0.7
) -> list[Candidate]:
    """Re-order for diversity; exact hits first and untouched. A candidate whose chunk
    is gone has no words (render drops it)."""
    pinned = [h for h in hits if h.exact]
    pool = [h for h in hits if not h.exact]
    if len(pool) <= 1:
        return list(hits)
    hi = max(h.score for h in pool)
    lo = min(h.score for h in pool)
    span = (hi - lo) or 1.0
    rows.need(h.id for h in pool)
    words = {id(h): set(_WORDS.findall(_text(rows, h.id).lower())) for h in pool}
    chosen: list[Candidate] = []
    while pool and len(chosen) + len(pinned) < limit:

        def value(h: Candidate) -> float:
            rel = (h.score - lo) / span
            if not chosen:
                return rel
            sim = max(_jaccard(words[id(h)], words[id(c)]) for c in chosen)
            return lam * rel - (1 - lam) * sim

        best = max(pool, key=value)
        chosen.append(best)
        pool.remove(best)
    return pinned + chosen + pool


def _text(rows: ChunkRows, cid: int) -> str:
    row = rows.get(cid)
    return "" if row is None else row.text


def _jaccard(a: set[str], b: set[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)
