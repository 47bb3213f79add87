"""What a query's time holds in the index: the chunks dated inside its windows
(listed for a query that is only time, shown after the word hits otherwise), and
whether a window holds anything at all."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import date, tzinfo
from typing import TYPE_CHECKING

from indexer.search.candidates import Candidate, ChunkRows
from indexer.search.ranking import hit_day
from indexer.search.when import TimeQuery, Window, midnight
from indexer.store.records import log_date

if TYPE_CHECKING:
    from indexer.store import IndexStore

__all__ = ["TimeScope", "with_window"]


class TimeScope:
    """The dated chunks of ``when``'s windows in ``store``, days counted in ``tz``,
    of the ``wanted`` sources (None: all)."""

    def __init__(
        self,
        store: IndexStore,
        when: TimeQuery,
        tz: tzinfo,
        wanted: list[str] | None,
    ) -> None:
        self.store, self.when, self.tz, self.wanted = store, when, tz, wanted
        self._memory: list[str] | None = None

    def memory_paths(self) -> list[str]:
        if self._memory is None:
            self._memory = list(self.store.file_states("memory"))
        return self._memory

    def holds_any(self, w: Window) -> bool:
        """Whether anything indexed is dated inside ``w``: a daily log of one of its
        days, a transcript chunk timed in it."""
        memory = self.wanted is None or "memory" in self.wanted
        if memory and any(_in(w, log_date(p)) for p in self.memory_paths()):
            return True
        if self.wanted is not None and "sessions" not in self.wanted:
            return False
        end = midnight(w.last, self.tz) + 86400 + 7200
        return bool(self.store.window_ids([], midnight(w.first, self.tz), end, 1))

    def dated(self, rows: ChunkRows, score: float, limit: int) -> list[Candidate]:
        """What is dated in the query's windows, newest day first; in a day, its daily
        log (in line order), then its transcript chunks, newest first; each with
        ``score``. At most ``limit`` transcript chunks."""
        windows = self.when.windows
        wanted = self.wanted
        paths: list[str] = []
        if wanted is None or "memory" in wanted:
            paths = [p for p in self.memory_paths() if self.when.holds(log_date(p))]
        first = min(w.first for w in windows)
        last = max(w.last for w in windows)
        end = midnight(last, self.tz) + 86400 + 7200  # a day of 25 hours, and then some
        timed_limit = 0 if wanted is not None and "sessions" not in wanted else limit
        found = self.store.window_ids(paths, midnight(first, self.tz), end, timed_limit)
        rows.need([cid for cid, _ in found])
        dated: list[tuple[tuple[int, int, float, int], Candidate]] = []
        for n, (cid, at) in enumerate(found):
            row = rows.get(cid)
            day = None if row is None else hit_day(row, self.tz)
            if row is None or day is None or not self.when.holds(day):
                continue
            if wanted is not None and row.source not in wanted:
                continue
            key = (-day.toordinal(), at is not None, -(at or 0.0), n)
            dated.append((key, Candidate(cid, row.source, 0.0, score, shown=score)))
        dated.sort(key=lambda x: x[0])
        return [c for _, c in dated]


def _in(w: Window, day: date | None) -> bool:
    return day is not None and w.holds(day)


def with_window(hits: list[Candidate], extra: list[Candidate], shown: float) -> list[Candidate]:
    """``extra`` (chunks of the window the words did not find, each shown at
    ``shown``) ranked after every hit whose own relevance is at least ``shown`` and
    before the others. A hit dated in the window (``dated``) that holds a word of the
    query ranks first (the question named the time: a hit outside it cannot answer
    it), one found only by its meaning is never ranked below that place: what holds
    the words and the time comes before what holds only the time. Hybrid's ranking
    scores are on another scale than the relevance a result shows, so the place is
    found by the shown scores."""
    above = [h.score for h in hits if (h.score if h.shown is None else h.shown) >= shown]
    if above:  # just below the lowest of them: the words' hits, then the time's
        score = math.nextafter(min(above), -math.inf)
        below = math.nextafter(score, -math.inf)
    else:  # above every hit
        below = math.nextafter(max((h.score for h in hits), default=shown), math.inf)
        score = math.nextafter(below, math.inf)
    top = max(score, max((h.score for h in hits), default=score))

    def lift(h: Candidate) -> Candidate:
        if not h.dated:
            return h
        if h.rank != 0.0:  # the words and the time: first, in their own order
            return replace(h, score=top + h.score, window_first=True)
        return replace(h, score=score) if h.score < score else h  # the time only

    placed = [replace(c, score=below, shown=shown) for c in extra]
    return sorted([*map(lift, hits), *placed], key=lambda h: -h.score)
