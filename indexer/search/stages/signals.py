"""Factors a chunk carries whatever the query: its curated signals and its age.

* ``entrySignals``: a MEMORY.md / USER.md entry's ``importance`` (1-10: x0.80 ..
  x1.25) and its repositories against the session's active ones (x1.15 for an entry
  of an active repository, x0.9 for another's), as OpenClaw's memory-core ranks
  them; an entry whose project annotation is malformed is dropped.
* ``rules``: a question that asks the assistant to act for the user, or how the
  user wants something ("can you book…", "should you…", "go ahead and order…, OK?",
  "window or aisle when you book…", "how should emails end", "any ideas for
  dinner"; ``ASKS_RULE``), is answered by the user's standing rules as much as by
  what the notes say about its nouns: USER.md's entries, and the MEMORY.md lines
  that state a rule or preference (``RULE_WORDS``: prefer, always, never, don't,
  ...), score ``RULE_BOOST`` times higher.
* ``decay`` (off by default): a dated daily log ``memory/YYYY-MM-DD*.md`` loses half
  its score every ``query.halfLifeDays`` before the day the question is asked;
  MEMORY.md, undated files and transcripts never decay, and neither does an exact
  hit (an ID written 119 days ago is still what the user asked for).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from datetime import date
from typing import TYPE_CHECKING

from indexer.search.candidates import Candidate, ChunkRows
from indexer.search.stages.base import Stage, by_score
from indexer.sources.curated import INVALID_PROJECT, is_curated_root, meta_of, project_keys
from indexer.store.records import log_date

if TYPE_CHECKING:
    from indexer.search.stages.context import RunContext

__all__ = [
    "ASKS_RULE",
    "RULE_BOOST",
    "RULE_WORDS",
    "Decay",
    "EntrySignals",
    "Rules",
    "asks_rule",
    "importance_factor",
    "project_factor",
]

RULE_BOOST = 1.5
# A question that asks the assistant to act for the user, or how the user wants it.
ASKS_RULE = re.compile(
    r"^\W*(?:can|could|will|would)\s+you\b|^\W*(?:should|shall)\s+(?:you|i|we)\b"
    r"|\b(?:should|shall)\s+(?:you|i|we|my|it|they|times?|emails?)\b"
    r"|\bis\s+it\s+(?:ok|okay|fine|alright|all\s+right)\b|\bgo\s+ahead\b"
    r"|\b(?:ok|okay)\s*\?\s*$|\bwhen\s+you\s+\w+|\bfor\s+me\s*\?\s*$"
    r"|\b(?:prefer|preference|preferences|favou?rite|rather)\b"
    r"|\bhow\s+(?:do|does|should|would)\s+(?:i|you|we)\s+(?:like|want|take|prefer)\b"
    r"|\bany\s+(?:ideas|suggestions|tips)\b|\b(?:recommend|suggest)\b",
    re.I,
)
# Words with which a MEMORY.md line states a rule or a preference.
RULE_WORDS = re.compile(
    r"\b(?:prefers?|preferred|preference|always|never|don'?t|do\s+not|doesn'?t|avoid|only"
    r"|likes?|loves?|hates?|dislikes?|favou?rite|rule|please|must|no\s+\w+\s+(?:before|after)"
    r"|allergic|vegetarian|vegan)\b",
    re.I,
)


def asks_rule(question: str) -> bool:
    return bool(ASKS_RULE.search(question))


def importance_factor(importance: int | None) -> float:
    """OpenClaw's importance multiplier: 1 -> 0.80, 5 -> 1.00, 9 -> 1.20, 10 -> 1.25."""
    return 1.0 if importance is None else 0.75 + max(1, min(10, importance)) * 0.05


def project_factor(project_key: str | None, active: tuple[str, ...]) -> float:
    """1.15 for an entry of an active repository, 0.9 for another's, else 1."""
    if not project_key or not active:
        return 1.0
    keys = project_keys(project_key)
    return 1.15 if all(k in active for k in keys) else 0.9


class EntrySignals(Stage):
    name = "entrySignals"

    def applies(self, ctx: RunContext) -> bool:
        return not ctx.listing

    def __call__(self, ctx: RunContext, hits: list[Candidate]) -> list[Candidate]:
        memory = [h.id for h in hits if h.source == "memory"]
        ctx.rows.need(memory)
        out: list[Candidate] = []
        changed = False
        for h in hits:
            row = ctx.rows.get(h.id) if h.source == "memory" else None
            if row is None or "<!--" not in row.text:
                out.append(h)
                continue
            meta = meta_of(row.path, row.text)
            if meta.project_key == INVALID_PROJECT:
                changed = True
                continue
            factor = importance_factor(meta.importance) * project_factor(
                meta.project_key, ctx.req.active_projects
            )
            if factor != 1.0:
                h = h.with_part(self.name, round(factor, 4), score=h.score * factor)
                changed = True
            out.append(h)
        return by_score(out) if changed else out


class Rules(Stage):
    name = "rules"

    def applies(self, ctx: RunContext) -> bool:
        return not ctx.listing and asks_rule(ctx.req.query)

    def __call__(self, ctx: RunContext, hits: list[Candidate]) -> list[Candidate]:
        head = [h for h in hits[: ctx.depth] if h.source == "memory"]
        ctx.rows.need([h.id for h in head])
        out: list[Candidate] = []
        changed = False
        for h in hits:
            row = ctx.rows.get(h.id) if h.source == "memory" else None
            if row is not None and (
                row.path == "USER.md"
                or (is_curated_root(row.path) and RULE_WORDS.search(row.text) is not None)
            ):
                h = h.with_part(self.name, RULE_BOOST, score=h.score * RULE_BOOST)
                changed = True
            out.append(h)
        return by_score(out) if changed else out


def log_dates(hits: Sequence[Candidate], rows: ChunkRows) -> list[date | None]:
    """Each hit's daily-log date (``log_date``): None for transcripts, undated files
    and exact hits. The rows needed are read in one batch."""
    dated = [h.source == "memory" and not h.exact for h in hits]
    rows.need([h.id for h, d in zip(hits, dated, strict=True) if d])
    out: list[date | None] = []
    for h, d in zip(hits, dated, strict=True):
        row = rows.get(h.id) if d else None
        out.append(None if row is None else log_date(row.path))
    return out


class Decay(Stage):
    name = "decay"

    def applies(self, ctx: RunContext) -> bool:
        return not ctx.listing

    def __call__(self, ctx: RunContext, hits: list[Candidate]) -> list[Candidate]:
        rate = math.log(2) / max(ctx.cfg.query.halfLifeDays, 1e-6)
        out: list[Candidate] = []
        for h, d in zip(hits, log_dates(hits, ctx.rows), strict=True):
            if d is not None:
                factor = math.exp(-rate * max(0, (ctx.today - d).days))
                h = h.with_part(self.name, round(factor, 4), score=h.score * factor)
            out.append(h)
        return by_score(out)
