"""The change versions an agent's writer last read, handed to its readers in the same
process (``VersionBoard``), so a search from the daemon asks the database only for
its rows.

Sound because the daemon holds the agent's writer lock: nothing else can change the
agent's index while it is held. The board is cleared before the writer changes a
version (``meta_set`` of one of the three keys) or publishes a generation, and set
again after each writer task from a read of what was committed; while it is clear
(mid-task, after a restart, with the lock lost) readers ask the database as before.
Not used when readers go to another server (``readUrl``: a replica lags).

The board also keeps the chunk rows its readers read (``cached_rows``/``keep_rows``):
a search whose results were read before takes them from memory instead of a round
trip. A chunk's row is never changed but by the writer deleting the chunk or moving
its file, and the writer evicts those ids before it commits (``evict``); from then
until its task is over (the next ``set``) no row read from the database is kept, as
it may predate the commit. The rows are dropped with the writer lock's session (a
restart, another process may write) and at a publish.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from indexer.store.writer_lock import PgLock

__all__ = ["VERSION_KEYS", "VersionBoard"]

VERSION_KEYS = frozenset({"chunksVersion", "vectorsVersion", "vectorKey"})
ROWS_KEPT = 4096  # chunk rows kept (about 5 MB of text at most)

Versions = tuple[str | None, str | None, str | None]


class VersionBoard:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        # (gen, versions, the writer lock, its connection when they were read)
        self._entry: tuple[int, Versions, PgLock, Any] | None = None
        self._rows: dict[int, Any] = {}  # chunk id -> its row
        self._rows_trust: tuple[int, PgLock, Any] | None = None  # (gen, lock, token)
        self._epoch = 0  # moves at every eviction: rows read across one are not kept
        self._writing = False  # evicted in the writer's current task: keep nothing

    def clear(self) -> None:
        with self._lock:
            self._entry = None

    def drop_rows(self) -> None:
        """Forget every kept row (a publish; the writer lock lost)."""
        with self._lock:
            self._rows, self._rows_trust = {}, None
            self._epoch += 1

    def set(self, gen: int, versions: Versions, lock: PgLock) -> None:
        """Set by the writer thread right after reading ``versions`` of its published
        generation ``gen`` while holding ``lock``."""
        token = lock.token()
        if token is None:
            return
        with self._lock:
            self._entry = (gen, versions, lock, token)
            trust = self._rows_trust
            if trust is None or trust[0] != gen or trust[1] is not lock or trust[2] != token:
                self._rows, self._epoch = {}, self._epoch + 1
            self._rows_trust = (gen, lock, token)
            self._writing = False  # the task's changes are committed

    def get(self) -> tuple[int, Versions] | None:
        """(published generation, its versions), or None: ask the database. None too
        once the writer lock's session is not the one the versions were read under,
        or the server said something on it (a restart ends the session; another
        process may have written since)."""
        entry = self._current()
        return None if entry is None else (entry[0], entry[1])

    def _current(self) -> tuple[int, Versions, PgLock, Any] | None:
        with self._lock:
            entry = self._entry
        if entry is None:
            return None
        if not entry[2].quiet(entry[3]):
            self.clear()
            return None
        return entry

    def cached_rows(self, gen: int, ids: Sequence[int]) -> tuple[int, dict[int, Any]] | None:
        """(a mark for ``keep_rows``, the kept rows of ``ids``) for a reader of
        generation ``gen``; None when the board does not vouch for that generation's
        rows (not set since a publish, or the writer lock's session ended)."""
        with self._lock:
            trust = self._rows_trust
            if trust is None or trust[0] != gen:
                return None
        if not trust[1].quiet(trust[2]):
            self.drop_rows()
            return None
        with self._lock:
            rows = self._rows
            mark = -1 if self._writing else self._epoch
            return mark, {i: rows[i] for i in ids if i in rows}

    def keep_rows(self, mark: int, rows: dict[int, Any]) -> None:
        """Keep ``rows``, read from the database after ``cached_rows`` gave ``mark``,
        unless the writer evicted something since (or was in a task that did)."""
        with self._lock:
            if mark == self._epoch and not self._writing and self._rows_trust is not None:
                room = ROWS_KEPT - len(self._rows)
                for i, row in list(rows.items())[: max(0, room)]:
                    self._rows[i] = row

    def evict(self, ids: Sequence[int] | None) -> None:
        """The writer is deleting or moving chunks ``ids`` (None: all of them), before
        it commits: their rows go, and none read from now until its task is over
        is kept."""
        with self._lock:
            self._epoch += 1
            self._writing = True
            if ids is None:
                self._rows = {}
            else:
                for i in ids:
                    self._rows.pop(i, None)
