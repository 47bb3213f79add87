"""The time a query names ("last week", "in March 2026", "yesterday"; ``when.py``).

* ``dateBoost``: a chunk dated inside a window the query names (a daily log by its
  file name, a transcript chunk by its newest message; ``hit_day``) scores ``1 +
  query.dateBoost`` times higher ("recently": less the older, ``Window.weight``).
* ``undatedMatch``: an undated memory note holding every word of a question of two
  words or more (less the time), where no note of the time does, may be of that
  time as well ("the plumber who came in March — what's his number?": the time
  describes, the curated entry about the plumber answers): it is boosted as the
  dated ones are, not buried under them.
* ``windowFill``: a topic within a time with an edge of at most ``WINDOW_DAYS`` days
  ("what did I buy last Friday"): the hits dated in the time that hold a word of
  the query rank first, in their own order (the question named the time: a hit
  outside it cannot answer it); what is dated in the time and was not found by the
  words follows every hit scoring at least ``WINDOW_SCORE`` (the time matches, not
  the words: a note that says "bought" is not lost to "buy"), and a hit dated in
  the time found only by its meaning never ranks below them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from indexer.search.candidates import Candidate
from indexer.search.stages.base import Stage, by_score, rescored
from indexer.search.stages.context import POOL_QUESTIONS, WINDOW_DAYS
from indexer.search.time_scope import hit_day

if TYPE_CHECKING:
    from indexer.search.stages.context import RunContext

__all__ = ["WINDOW_SCORE", "DateBoost", "UndatedMatch", "WindowFill", "window_order"]

WINDOW_SCORE = 0.5


class DateBoost(Stage):
    name = "dateBoost"

    def applies(self, ctx: RunContext) -> bool:
        return not ctx.listing and bool(ctx.when.windows) and ctx.cfg.query.dateBoost > 0

    def __call__(self, ctx: RunContext, hits: list[Candidate]) -> list[Candidate]:
        ctx.rows.need([h.id for h in hits])
        boost = ctx.cfg.query.dateBoost
        out: list[Candidate] = []
        for h in hits:
            row = ctx.rows.get(h.id)
            day = None if row is None else hit_day(row, ctx.tz)
            weight = 0.0 if day is None else ctx.when.weight(day)
            if weight > 0:
                factor = 1.0 + boost * weight
                h = h.with_part(self.name, round(factor, 4), score=h.score * factor)
            out.append(h)
        return by_score(out)


class UndatedMatch(Stage):
    name = "undatedMatch"

    def applies(self, ctx: RunContext) -> bool:
        words = len(ctx.q.stems) + len(ctx.q.cjk)
        return DateBoost().applies(ctx) and words >= 2

    def __call__(self, ctx: RunContext, hits: list[Candidate]) -> list[Candidate]:
        words = len(ctx.q.stems) + len(ctx.q.cjk)
        dated = [h for h in hits if DateBoost.name in h.parts]
        best = max((ctx.held(h) for h in dated), default=0)  # the most a note of the time holds
        factor = 1.0 + ctx.cfg.query.dateBoost
        out: list[Candidate] = []
        changed = False
        for h in hits:
            if (
                DateBoost.name not in h.parts
                and h.source == "memory"
                and h.rank != 0.0
                and ctx.held(h) == words > best
            ):
                row = ctx.rows.get(h.id)
                if row is not None and hit_day(row, ctx.tz) is None:  # undated
                    h = h.with_part(self.name, round(factor, 4), score=h.score * factor)
                    changed = True
            out.append(h)
        return by_score(out) if changed else out


class WindowFill(Stage):
    name = "windowFill"

    def applies(self, ctx: RunContext) -> bool:
        return not ctx.listing and ctx.short_hard_window(WINDOW_DAYS) and ctx.floor <= WINDOW_SCORE

    def __call__(self, ctx: RunContext, hits: list[Candidate]) -> list[Candidate]:
        known = {h.id for h in hits}
        extra = [
            Candidate(cid, source, 0.0, WINDOW_SCORE, parts={self.name: "dated in the time"})
            for cid, source in ctx.scope.dated(ctx.rows, 2 * POOL_QUESTIONS)
            if cid not in known
        ]
        ctx.dated = {c.id for c in extra}
        return window_order(hits, extra)


def window_order(hits: list[Candidate], extra: list[Candidate]) -> list[Candidate]:
    """``hits`` with those dated in the time (``dateBoost``'s) that hold a word of
    the query first, in their own order; those found by their meaning alone at
    ``WINDOW_SCORE`` at least; and ``extra`` (the time's chunks the words did not
    find, scoring ``WINDOW_SCORE``) after every hit scoring as much."""
    name = WindowFill.name
    dated = {h.id for h in hits if DateBoost.name in h.parts or UndatedMatch.name in h.parts}
    first = [
        h.with_part(name, "in the time, with a word of the query")
        for h in hits
        if h.id in dated and h.rank != 0.0
    ]
    lifted = {h.id for h in first}
    rest = []
    for h in hits:
        if h.id in lifted:
            continue
        if h.id in dated and h.score < WINDOW_SCORE:  # the time only: not below it
            h = h.with_part(name, "in the time", score=WINDOW_SCORE)
        rest.append(h)
    return rescored(first + by_score(rest + extra), raised=lifted)
