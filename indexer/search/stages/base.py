"""What a stage is, the only ways a stage may change the order, and what stages
share: a chunk's keyword score (``bm25_to_score``), which of the query's words it
holds (``classify``), the thread pool slow calls run on (``pool``).

A ``Stage`` has a ``name`` (its switch ``query.stages.<name>`` and its key in
``explain``), says whether it has anything to do for a query (``applies``), and is
one call from the run's context and the hits, best first, to new hits, best first.
The list it returns is sorted by ``score``: a stage that scales scores re-sorts
(``by_score``); a stage that moves hits gives them the scores of their new places
(``rescored``), so the score a result shows is always the score it is ranked by.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import TYPE_CHECKING, ClassVar

from indexer.search.candidates import Candidate
from indexer.search.snippets import has_word_with_prefix
from indexer.store import SearchRow

if TYPE_CHECKING:
    from indexer.search.query.parse import ParsedQuery
    from indexer.search.stages.context import RunContext

__all__ = ["Stage", "bm25_to_score", "by_score", "classify", "is_sorted", "pool", "rescored"]


class Stage:
    """One step of the ranking pipeline."""

    name: ClassVar[str] = ""
    # False: a core step (retrieval, fusion, the floor, the cut): no switch, always on
    switch: ClassVar[bool] = True
    # True: the step also runs for a query that is only a time (the listing)
    listing: ClassVar[bool] = False
    # False: the hits it drops are not listed in the trace (the cut)
    traces_drops: ClassVar[bool] = True

    def applies(self, ctx: RunContext) -> bool:
        """Whether this query gives the stage anything to do (cheap: no store reads)."""
        return True

    def prepare(self, ctx: RunContext) -> None:
        """Called before the first stage runs, for each stage that will run (a stage
        that waits on something slow starts it here)."""

    def __call__(self, ctx: RunContext, hits: list[Candidate]) -> list[Candidate]:
        raise NotImplementedError


def by_score(hits: Sequence[Candidate]) -> list[Candidate]:
    """``hits`` sorted by score, best first; equal scores keep their order."""
    return sorted(hits, key=lambda h: -h.score)


def rescored(order: Sequence[Candidate], raised: Collection[int] = ()) -> list[Candidate]:
    """``order`` (a stage's new order) with scores that are that order: a hit moved up
    (its id in ``raised``) takes the score of the hit now below it when that is
    higher ("ranked as that one"); then any hit scoring above the hit before it takes
    that hit's score (a hit moved down ranks as the one above it). Scores only change
    where the order asks for it."""
    out = list(order)
    for i in range(len(out) - 2, -1, -1):
        h = out[i]
        if h.id in raised and out[i + 1].score > h.score:
            out[i] = replace(h, score=out[i + 1].score)
    for i in range(1, len(out)):
        if out[i].score > out[i - 1].score:
            out[i] = replace(out[i], score=out[i - 1].score)
    return out


def is_sorted(hits: Sequence[Candidate]) -> bool:
    """Whether scores never rise down ``hits`` (the pipeline's invariant)."""
    return all(a.score >= b.score for a, b in zip(hits, hits[1:], strict=False))


_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def pool() -> ThreadPoolExecutor:
    """Query embeddings and rerank calls with a deadline run here; sized for many
    concurrent socket clients (the threads mostly wait in a provider). Made on first
    use."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=64, thread_name_prefix="memindex-search")
        return _POOL


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
