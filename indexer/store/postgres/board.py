"""The change versions an agent's writer last read, handed to its readers in the same
process (``VersionBoard``), so a search from the daemon asks the database only for
its rows.

Sound because the daemon holds the agent's writer lock: nothing else can change the
agent's index while it is held. The board is cleared before the writer changes a
version (``meta_set`` of one of the three keys) or publishes a generation, and set
again after each writer task from a read of what was committed; while it is clear
(mid-task, after a restart, with the lock lost) readers ask the database as before.
Not used when readers go to another server (``readUrl``: a replica lags).

The board also keeps the chunk rows its readers read while it holds one entry
(``cached_rows``/``keep_rows``): a chunk's row changes only with a new chunksVersion,
which clears the board first, so rows read under an entry hold for as long as it
does. A search whose results were read before takes them from memory instead of a
round trip.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from indexer.store.writer_lock import PgLock

__all__ = ["VERSION_KEYS", "VersionBoard"]

VERSION_KEYS = frozenset({"chunksVersion", "vectorsVersion", "vectorKey"})
ROWS_KEPT = 4096  # chunk rows kept per board entry (about 5 MB of text at most)

Versions = tuple[str | None, str | None, str | None]


class VersionBoard:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        # (gen, versions, the writer lock, its connection when they were read)
        self._entry: tuple[int, Versions, PgLock, Any] | None = None
        self._rows: dict[int, Any] = {}  # chunk id -> its row, read under _rows_for
        self._rows_for: object = None

    def clear(self) -> None:
        with self._lock:
            self._entry = None
            self._rows, self._rows_for = {}, None

    def set(self, gen: int, versions: Versions, lock: PgLock) -> None:
        """Set by the writer thread right after reading ``versions`` of its published
        generation ``gen`` while holding ``lock``."""
        token = lock.token()
        if token is None:
            return
        with self._lock:
            self._entry = (gen, versions, lock, token)

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

    def cached_rows(self, gen: int, ids: Sequence[int]) -> tuple[object, dict[int, Any]] | None:
        """(the entry, the rows of ``ids`` kept under it) for a reader of generation
        ``gen``; None while the board does not vouch for that generation."""
        entry = self._current()
        if entry is None or entry[0] != gen:
            return None
        with self._lock:
            if self._rows_for is not entry:
                self._rows_for, self._rows = entry, {}
            rows = self._rows
            return entry, {i: rows[i] for i in ids if i in rows}

    def keep_rows(self, entry: object, rows: dict[int, Any]) -> None:
        """Keep ``rows``, read from the database after ``cached_rows`` gave ``entry``,
        if the board still holds that entry (else they may predate a change)."""
        with self._lock:
            if self._entry is entry and self._rows_for is entry:
                room = ROWS_KEPT - len(self._rows)
                for i, row in list(rows.items())[: max(0, room)]:
                    self._rows[i] = row
