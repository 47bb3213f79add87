"""Stages after fusion: temporal decay, source balance, MMR diversity. Pure.

* Temporal decay (off by default): a dated daily log ``memory/YYYY-MM-DD*.md`` loses
  half its score every ``halfLifeDays``; MEMORY.md, undated files and transcripts
  never decay, and neither does an exact hit (an ID written 119 days ago is still
  what the user asked for).
* Time named in the query (``query.dateBoost``): a chunk dated inside a window the
  query names ("last week", "in March 2026", "yesterday"; when.py) ranks as if its
  score were ``1 + dateBoost`` times higher: a daily log by its file name, a
  transcript chunk by its newest message.
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
from datetime import UTC, date, datetime, tzinfo

from indexer.search.candidates import Candidate, ChunkRows
from indexer.search.query import stem_prefix
from indexer.search.snippets import has_word_with_prefix
from indexer.search.when import TimeQuery, day_of
from indexer.sources.curated import INVALID_PROJECT, meta_of, project_keys
from indexer.store import SearchRow
from indexer.store.records import log_date

__all__ = [
    "apply_decay",
    "balance_sources",
    "boost_window",
    "hit_day",
    "line_speakers",
    "mmr",
    "relevance",
]

_WORDS = re.compile(r"[a-z0-9_]+")


def _log_dates(hits: Sequence[Candidate], rows: ChunkRows, *, exact_too: bool) -> list[date | None]:
    """Each hit's daily-log date (``log_date``): None for transcripts, undated files
    and, unless ``exact_too``, exact hits. The rows needed are read in one batch."""
    dated = [h.source == "memory" and (exact_too or not h.exact) for h in hits]
    rows.need([h.id for h, d in zip(hits, dated, strict=True) if d])
    out: list[date | None] = []
    for h, d in zip(hits, dated, strict=True):
        row = rows.get(h.id) if d else None
        out.append(None if row is None else log_date(row.path))
    return out


def apply_decay(
    hits: Sequence[Candidate], rows: ChunkRows, half_life_days: float, today: date | None = None
) -> list[Candidate]:
    """The candidates with dated daily logs' scores scaled by their age, re-sorted."""
    today = today or datetime.now(UTC).date()
    rate = math.log(2) / max(half_life_days, 1e-6)
    out: list[Candidate] = []
    for h, d in zip(hits, _log_dates(hits, rows, exact_too=False), strict=True):
        if d is not None:
            age = max(0, (today - d).days)
            factor = math.exp(-rate * age)
            h = replace(h, score=h.score * factor, decay=factor)
        out.append(h)
    out.sort(key=lambda h: -h.score)
    return out


def hit_day(row: SearchRow, tz: tzinfo) -> date | None:
    """The day a chunk belongs to: a daily log's by its file name, a transcript
    chunk's by its newest message (in ``tz``); None for the rest."""
    if row.at is not None:
        return day_of(row.at, tz)
    return log_date(row.path) if row.source == "memory" else None


def boost_window(
    hits: Sequence[Candidate],
    rows: ChunkRows,
    when: TimeQuery,
    tz: tzinfo,
    boost: float,
) -> list[Candidate]:
    """The candidates dated inside the query's windows (``hit_day``) ranked ``1 +
    boost`` times higher ("recently": less the older, ``Window.weight``), re-sorted.
    The result's shown ``score`` stays the chunk's own relevance (0..1): the boost
    changes the order, not how well it matched."""
    rows.need([h.id for h in hits])
    out: list[Candidate] = []
    for h in hits:
        row = rows.get(h.id)
        weight = 0.0 if row is None else when.weight(hit_day(row, tz))
        if weight > 0:
            factor = 1.0 + boost * weight
            shown = h.score if h.shown is None else h.shown
            h = replace(h, score=h.score * factor, dated=factor, shown=shown)
        out.append(h)
    out.sort(key=lambda h: -h.score)
    return out


def importance_factor(importance: int | None) -> float:
    """OpenClaw's importance multiplier: 1 -> 0.80, 5 -> 1.00, 9 -> 1.20, 10 -> 1.25."""
    return 1.0 if importance is None else 0.75 + max(1, min(10, importance)) * 0.05


def project_factor(project_key: str | None, active: tuple[str, ...]) -> float:
    """1.15 for an entry of an active repository, 0.9 for another's, else 1."""
    if not project_key or not active:
        return 1.0
    keys = project_keys(project_key)
    return 1.15 if all(k in active for k in keys) else 0.9


def curated_signals(
    hits: Sequence[Candidate], rows: ChunkRows, active_projects: tuple[str, ...]
) -> list[Candidate]:
    """A memory entry's written signals in the order, as OpenClaw ranks them: its
    ``importance`` (1-10) and its repositories against the session's active ones;
    an entry whose project annotation is malformed is dropped. The shown ``score``
    stays the chunk's own relevance."""
    annotated = [h.source == "memory" for h in hits]
    rows.need([h.id for h, a in zip(hits, annotated, strict=True) if a])
    out: list[Candidate] = []
    changed = False
    for h, a in zip(hits, annotated, strict=True):
        row = rows.get(h.id) if a else None
        if row is None or "<!--" not in row.text:
            out.append(h)
            continue
        meta = meta_of(row.path, row.text)
        if meta.project_key == INVALID_PROJECT:
            changed = True
            continue
        factor = importance_factor(meta.importance) * project_factor(
            meta.project_key, active_projects
        )
        if factor != 1.0:
            shown = h.score if h.shown is None else h.shown
            h = replace(h, score=h.score * factor, signal=factor, shown=shown)
            changed = True
        out.append(h)
    if changed:
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
    rows.need([h.id for h in pool])
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


# A line's speaker: "**Name**:" (a daily log: "- [D1:3] 13:56 **Caroline**: ..."),
# "Role (Name):" (a transcript line as memindex writes it: "User (Caroline): ...")
# or "Name:" at the start of the line.
_SPEAKER = re.compile(
    r"^[\s>*-]*(?:\[[^\]\n]{0,40}\]\s*)?(?:\d{1,2}:\d{2}\s+)?"
    r"(?:\*\*([^*\n]{1,40})\*\*\s*:|[A-Za-z]+ \(([^)\n]{1,40})\):|([A-Z][\w.-]{0,30}):)",
    re.M,
)


def line_speakers(text: str) -> list[tuple[str | None, str]]:
    """(speaker lower-cased or None, line lower-cased) for each line of ``text``."""
    out: list[tuple[str | None, str]] = []
    for line in text.split("\n"):
        m = _SPEAKER.match(line)
        who = None if m is None else next(g for g in m.groups() if g)
        out.append((None if who is None else who.strip().lower(), line.lower()))
    return out


# A line by someone other than the person a query names counts for this much of its
# word coverage: an unanswerable question is usually a real one asked about the
# wrong person (docs/RETRIEVAL.md, "Abstention").
OTHER_SPEAKER = 0.3


def relevance(
    words: Sequence[str], hits: Sequence[Candidate], rows: ChunkRows, top: int = 3
) -> float:
    """How likely the best ``top`` hits answer a query of ``words`` (lower-cased, in
    order), 0..1: the best line of those chunks by the share of the query's other
    words it holds (a word counts where a word of the line starts with its stem),
    times ``OTHER_SPEAKER`` when the query names a speaker of these lines and the
    line is someone else's. Names are query words that are also speakers here."""
    head = list(hits[:top])
    rows.need([h.id for h in head])
    lines = [ls for h in head if (row := rows.get(h.id)) for ls in line_speakers(row.text)]
    if not lines:
        return 0.0
    speakers = {who for who, _ in lines if who}
    named = {w for w in words if w in speakers}
    stems = list(dict.fromkeys(stem_prefix(w) for w in words if w not in named))
    if not stems:
        return 1.0
    best = 0.0
    for who, low in lines:
        held = sum(1 for s in stems if has_word_with_prefix(low, s))
        share = held / len(stems)
        if named and who not in named:
            share *= OTHER_SPEAKER
        best = max(best, share)
    return best
