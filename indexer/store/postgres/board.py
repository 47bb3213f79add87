"""The change versions an agent's writer last read, handed to its readers in the same
process (``VersionBoard``), so a search from the daemon asks the database only for
its rows.

Sound because the daemon holds the agent's writer lock: nothing else can change the
agent's index while it is held. The board is cleared before the writer changes a
version (``meta_set`` of one of the three keys) or publishes a generation, and set
again after each writer task from a read of what was committed; while it is clear
(mid-task, after a restart, with the lock lost) readers ask the database as before.
Not used when readers go to another server (``readUrl``: a replica lags).
"""

from __future__ import annotations

import threading
from typing import Any

from indexer.store.writer_lock import PgLock

__all__ = ["VERSION_KEYS", "VersionBoard"]

VERSION_KEYS = frozenset({"chunksVersion", "vectorsVersion", "vectorKey"})

Versions = tuple[str | None, str | None, str | None]


class VersionBoard:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        # (gen, versions, the writer lock, its connection when they were read)
        self._entry: tuple[int, Versions, PgLock, Any] | None = None

    def clear(self) -> None:
        with self._lock:
            self._entry = None

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
        with self._lock:
            entry = self._entry
        if entry is None:
            return None
        gen, versions, lock, token = entry
        if not lock.quiet(token):
            self.clear()
            return None
        return gen, versions
