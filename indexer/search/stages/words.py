"""Rules on which of the query's words a hit holds.

* ``exactBoost``: a chunk holding an exact token or quoted phrase of the query ranks
  as if its BM25 were ``EXACT_BOOST`` stronger, rather than first of all: a common
  "exact" token (a claim's "IL-6") is held by many weak chunks, while a rare ID wins
  on BM25 anyway.
* ``exactAnchor``: a short question around an exact token ("who's handling
  OPS-2304?") is anchored on it: the chunks holding it rank above every chunk that
  only holds another word ("GitHub handle" for "handling"). A longer one (a claim
  naming "IL-6" among ten words) ranks on all its words. Keyword ranking only
  (weighted fusion scores each side again from its BM25).
* ``ties``: keyword hits of equal score (chunks of the same length holding the same
  query word as often, common in small workspaces) by how many of the query's words
  each holds. Keyword ranking and rank fusion only.
* ``subject`` (after fusion): a question asking for a value ("the plumber's name",
  "Mom's number") is about its other words: a hit that
  holds only the words asking for the value (``VALUE_WORDS``: "- Name: Dana Reyes"
  for the plumber's name) and none of what the question is about ranks below every
  hit holding one of those, in its own order; a hit holding no word of the query (a
  match by meaning) keeps its place.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import TYPE_CHECKING

from indexer.search.candidates import Candidate
from indexer.search.query.parse import stem_prefix
from indexer.search.snippets import has_word_with_prefix
from indexer.search.stages.base import Stage, bm25_to_score, by_score, classify

if TYPE_CHECKING:
    from indexer.search.stages.context import RunContext

__all__ = [
    "ANCHOR_WORDS",
    "EXACT_BOOST",
    "VALUE_WORDS",
    "ExactAnchor",
    "ExactBoost",
    "Subject",
    "Ties",
]

# Words a question asks for a value with, not what it is about.
# (Not "time", "day" or "cost": "focus time", "a day off" and "the cost of living"
# are what a note is about as often as what a question asks for.)
VALUE_WORDS = frozenset(("name", "names", "number", "numbers", "address", "addresses", "email"))

EXACT_BOOST = 0.25
# A question with an exact token and at most this many other words is anchored on it.
ANCHOR_WORDS = 2


def _keyword_order(ctx: RunContext) -> bool:
    """Whether the keyword list's order is the ranking's (keyword mode, rank fusion)."""
    return ctx.mode == "keyword" or ctx.cfg.hybrid.fusion == "rrf"


class ExactBoost(Stage):
    name = "exactBoost"

    def applies(self, ctx: RunContext) -> bool:
        return not ctx.listing and bool(ctx.q.needles)

    def __call__(self, ctx: RunContext, hits: list[Candidate]) -> list[Candidate]:
        out = []
        for h in hits:
            if h.exact:
                rank = h.rank * (1.0 + EXACT_BOOST)
                ts = bm25_to_score(rank)
                h = h.with_part(self.name, 1.0 + EXACT_BOOST, rank=rank, score=ts, text_score=ts)
            out.append(h)
        return by_score(out)


class ExactAnchor(Stage):
    name = "exactAnchor"

    def applies(self, ctx: RunContext) -> bool:
        q = ctx.q
        return (
            not ctx.listing
            and _keyword_order(ctx)
            and bool(q.exact)
            and len(q.terms) <= ANCHOR_WORDS
        )

    def __call__(self, ctx: RunContext, hits: list[Candidate]) -> list[Candidate]:
        holding = [h for h in hits if h.exact]
        rest = [h for h in hits if not h.exact]
        if not holding or not rest:
            return hits
        # the rest scaled to rank below the lowest holder, in their own order
        low, high = min(h.score for h in holding), max(h.score for h in rest)
        if high <= low:
            return hits
        f = low / high if high > 0 else 0.0
        return holding + [
            h.with_part(self.name, round(f, 4), score=min(h.score * f, low)) for h in rest
        ]


class Ties(Stage):
    name = "ties"

    def applies(self, ctx: RunContext) -> bool:
        return not ctx.listing and _keyword_order(ctx)

    def __call__(self, ctx: RunContext, hits: list[Candidate]) -> list[Candidate]:
        rounded = {h.id: round(h.score, 6) for h in hits}
        counts = Counter(rounded.values())
        tied = [h for h in hits if counts[rounded[h.id]] > 1]
        if not tied:
            return hits
        ctx.rows.need([h.id for h in tied])
        held: dict[int, int] = {}
        for h in tied:
            row = ctx.rows.get(h.id)
            held[h.id] = 0 if row is None else classify(row, ctx.q)[2]
        out = sorted(hits, key=lambda h: (-rounded[h.id], -held.get(h.id, 0)))
        # the tied are equal now (they differed below the 6th place, which says nothing)
        return [
            h.with_part(self.name, held[h.id], score=rounded[h.id]) if h.id in held else h
            for h in out
        ]


class Subject(Stage):
    name = "subject"

    def applies(self, ctx: RunContext) -> bool:
        terms = ctx.q.terms
        return (
            not ctx.listing
            and any(t in VALUE_WORDS for t in terms)
            and any(t not in VALUE_WORDS for t in terms)
        )

    def __call__(self, ctx: RunContext, hits: list[Candidate]) -> list[Candidate]:
        terms = ctx.q.terms
        about = [stem_prefix(t) for t in terms if t not in VALUE_WORDS]
        asks = [stem_prefix(t) for t in terms if t in VALUE_WORDS]
        head = hits[: ctx.depth]
        ctx.rows.need([h.id for h in head])
        holding: list[Candidate] = []
        only: list[Candidate] = []  # a value word, nothing it is about
        for h in head:
            row = ctx.rows.get(h.id)
            text = "" if row is None else row.text.lower()
            if any(has_word_with_prefix(text, s) for s in about) or not any(
                has_word_with_prefix(text, s) for s in asks
            ):
                holding.append(h)
            else:
                only.append(h)
        if not only or not holding:
            return hits
        low, high = min(h.score for h in holding), max(h.score for h in only)
        if high <= low:
            return hits
        f = low / high if high > 0 else 0.0
        demoted = [h.with_part(self.name, round(f, 4), score=min(h.score * f, low)) for h in only]
        rest = [replace(h, score=min(h.score, demoted[-1].score)) for h in hits[ctx.depth :]]
        return holding + demoted + rest
