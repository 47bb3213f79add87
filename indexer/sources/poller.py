"""Polling a set of directories from one thread: the watcher's fallback when
inotify cannot be used (``watcher.Watcher``)."""

from __future__ import annotations

import errno
import logging
import os
import threading
import time

from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers.api import ObservedWatch

__all__ = ["Poller"]

log = logging.getLogger(__name__)

_Entry = tuple[bool, int, int, int, int]  # is_dir, inode, mtime_ns, ctime_ns, size


class Poller:
    """Polling for when inotify cannot be used: one thread for every directory.

    watchdog's ``PollingObserver`` runs a thread per watch; with one watch per
    directory, a tree of 10,000 directories (``extraPaths`` on a big folder) made
    thousands of threads that kept two cores busy, and the daemon stopped
    answering. Here one thread lists each scheduled directory in turn
    (``os.scandir``, no recursion: each directory is scheduled on its own) and hands
    what changed to the handler as watchdog events. It waits ``interval`` between
    passes, and at least twice as long as the last pass took, so scanning never
    takes more than a third of a core."""

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self._lock = threading.Lock()
        self._dirs: dict[str, tuple[FileSystemEventHandler, dict[str, _Entry]]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="memindex-poll", daemon=True)
        self.last_pass_s = 0.0

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def join(self, timeout: float | None = None) -> None:
        if self._thread.is_alive():
            self._thread.join(timeout)

    def schedule(
        self, handler: FileSystemEventHandler, path: str, recursive: bool = False
    ) -> ObservedWatch:
        if recursive:
            raise ValueError("the poller watches single directories")
        seen = _listing(path)
        if seen is None:
            raise FileNotFoundError(errno.ENOENT, "no such directory", path)
        with self._lock:
            self._dirs[path] = (handler, seen)
        return ObservedWatch(path, recursive=False)

    def unschedule(self, watch: ObservedWatch) -> None:
        with self._lock:
            self._dirs.pop(watch.path, None)

    def _run(self) -> None:
        while not self._stop.wait(max(self.interval, 2 * self.last_pass_s)):
            t0 = time.monotonic()
            with self._lock:
                dirs = list(self._dirs)
            for d in dirs:
                if self._stop.is_set():
                    return
                try:
                    self._scan(d)
                except Exception:  # one odd directory never stops the others
                    log.exception("polling %s failed", d)
            self.last_pass_s = time.monotonic() - t0

    def _scan(self, d: str) -> None:
        with self._lock:
            got = self._dirs.get(d)
        if got is None:
            return
        handler, before = got
        now = _listing(d)
        if now is None:  # the directory went away: its parent's scan reports it
            now = {}
        gone: list[FileSystemEvent] = []  # reported first: a replaced entry goes, then comes
        for name, e in before.items():
            if name not in now or now[name][:2] != e[:2]:
                path = os.path.join(d, name)
                gone.append(DirDeletedEvent(path) if e[0] else FileDeletedEvent(path))
        events: list[FileSystemEvent] = []
        for name, e in now.items():
            path = os.path.join(d, name)
            old = before.get(name)
            if old is None or old[:2] != e[:2]:
                events.append(DirCreatedEvent(path) if e[0] else FileCreatedEvent(path))
            elif old != e and not e[0]:
                events.append(FileModifiedEvent(path))
        with self._lock:
            if d in self._dirs:
                self._dirs[d] = (handler, now)
        for ev in gone + events:
            handler.dispatch(ev)


def _listing(d: str) -> dict[str, _Entry] | None:
    """A directory's entries, None if it cannot be listed."""
    try:
        with os.scandir(d) as it:
            out: dict[str, _Entry] = {}
            for e in it:
                try:
                    st = e.stat(follow_symlinks=False)
                except OSError:
                    continue
                out[e.name] = (
                    e.is_dir(follow_symlinks=False),
                    st.st_ino,
                    st.st_mtime_ns,
                    st.st_ctime_ns,  # an edit that restores the mtime still moves it
                    st.st_size,
                )
            return out
    except OSError:
        return None
