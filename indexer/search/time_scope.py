"""What a query's time holds in the index: the day each chunk belongs to
(``hit_day``), the chunks dated inside the query's windows (listed for a query that
is only time, shown after the word hits otherwise), and whether a window holds
anything at all."""

from __future__ import annotations

from datetime import date, tzinfo
from typing import TYPE_CHECKING

from indexer.search.candidates import ChunkRows
from indexer.search.query.when import TimeQuery, Window, day_of, midnight
from indexer.store import FileState, SearchRow
from indexer.store.records import log_date

if TYPE_CHECKING:
    from indexer.store import IndexStore

__all__ = ["TimeScope", "hit_day"]


def hit_day(row: SearchRow, tz: tzinfo) -> date | None:
    """The day a chunk belongs to: a daily log's by its file name, a transcript
    chunk's by its newest message (in ``tz``); None for the rest."""
    if row.at is not None:
        return day_of(row.at, tz)
    return log_date(row.path) if row.source == "memory" else None


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
        self._memory: dict[str, FileState] | None = None

    def memory_states(self) -> dict[str, FileState]:
        """The memory files' states (hash, mtime, size), read once."""
        if self._memory is None:
            self._memory = self.store.file_states("memory")
        return self._memory

    def memory_paths(self) -> list[str]:
        return list(self.memory_states())

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

    def dated(self, rows: ChunkRows, limit: int) -> list[tuple[int, str]]:
        """What is dated in the query's windows as (chunk id, source), newest day
        first; in a day, its daily log (in line order), then its transcript chunks,
        newest first. At most ``limit`` transcript chunks."""
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
        dated: list[tuple[tuple[int, bool, float, int], tuple[int, str]]] = []
        for n, (cid, at) in enumerate(found):
            row = rows.get(cid)
            day = None if row is None else hit_day(row, self.tz)
            if row is None or day is None or not self.when.holds(day):
                continue
            if wanted is not None and row.source not in wanted:
                continue
            key = (-day.toordinal(), at is not None, -(at or 0.0), n)
            dated.append((key, (cid, row.source)))
        dated.sort(key=lambda x: x[0])
        return [c for _, c in dated]


def _in(w: Window, day: date | None) -> bool:
    return day is not None and w.holds(day)
