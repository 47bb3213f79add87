"""File watching: events in, "agent X's memory/sessions changed" out. No SQL.

Each directory that holds indexable files gets its own non-recursive watch, so an
ignored directory (``node_modules``, ``.venv``, …) is never watched at all — a
recursive watch would add an inotify watch for every directory below it. New
directories are watched as they appear; ``refresh()`` re-computes the set (a watched
directory deleted and created again, a sessions folder that appears later).

The inotify observer is used where it works. When the OS refuses watches (EMFILE,
ENOSPC, ENOMEM: inotify limits) or a tree has more than ``max_dirs`` directories,
the watcher switches to polling and ``status()`` says why.

Locks and threads (the order is the contract; never take them the other way round):

* ``Watcher._lock`` guards the observer and its watches. ``start``, ``stop``,
  ``refresh`` and ``status`` take it, and only ``refresh``/``start`` call into the
  observer while holding it (schedule, unschedule: they take the observer's lock).
  So the one order is ``Watcher._lock`` -> observer lock.
* watchdog's dispatcher thread holds the observer's lock while it calls ``_event``.
  ``_event`` therefore takes no lock of ours: it reads ``_targets``, an immutable
  mapping that ``refresh`` replaces whole, and it never calls the observer. A new or
  deleted directory only *asks* for a refresh, which the watcher's own refresh
  thread carries out.
* ``stop`` joins the refresh thread and the observer without holding ``_lock``.

(The other way round deadlocks: ``refresh`` holding ``_lock`` would wait for the
observer's lock, which the dispatcher holds while it waits for ``_lock`` in
``_event``.)
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from watchdog.events import (
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver, ObservedWatch

from indexer.api import WatcherState
from indexer.config import DEFAULT_IGNORE_DIRS, Config
from indexer.sources.discovery import MEMORY_DIR, ROOT_FILES, roots_for
from indexer.sources.patterns import is_ignored
from indexer.sources.poller import Poller
from indexer.sources.safefs import MAX_DEPTH
from indexer.sources.transcripts.sessions import is_transcript_name

__all__ = ["Watcher"]

log = logging.getLogger(__name__)

OnChange = Callable[[str, str, str], None]  # (agent, "memory" | "sessions", path)
ObserverFactory = Callable[[], BaseObserver]

_LIMIT_ERRNOS = {errno.EMFILE, errno.ENOSPC, errno.ENOMEM, errno.ENFILE}


@dataclass(frozen=True)
class _Target:
    agent: str
    # "memory" | "sessions" | "root" (workspace root: MEMORY.md, memory.md) | "agentdb"
    # (the folder of OpenClaw's agent database: its transcripts since 2026.9) |
    # "parent" (the nearest existing folder above a sessions or database folder that
    # does not exist yet: its creation is what is waited for; the folder an extra
    # path is in: it may go and come back)
    role: str
    include_rotated: bool = True
    # a "parent" of an extra path: that path (a directory event on it, or on a folder
    # on the way to it, moved, deleted or made, changes what the extra path holds)
    watch_for: str = ""


class _Handler(FileSystemEventHandler):
    def __init__(self, watcher: Watcher) -> None:
        self.watcher = watcher

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed_no_write"):
            return
        for p in (event.src_path, getattr(event, "dest_path", "")):
            if p:
                self.watcher._event(os.fsdecode(p), event.is_directory, event.event_type)


class Watcher:
    def __init__(
        self,
        on_change: OnChange,
        *,
        mode: str = "auto",
        poll_interval: float = 2.0,
        max_dirs: int = 2000,
        observer_factory: ObserverFactory | None = None,
    ) -> None:
        self.on_change = on_change
        self.mode = mode
        self.poll_interval = poll_interval
        self.max_dirs = max_dirs
        self._factory = observer_factory or Observer
        self._lock = threading.RLock()
        self._agents: dict[str, Config] = {}
        # dir -> what it serves; replaced whole by refresh(), read by _event() unlocked
        self._targets: Mapping[str, frozenset[_Target]] = {}
        # directory -> its watch and the (device, inode) it was made on: a directory
        # deleted and made again under the same name (git checkout, rsync) is
        # another one, and the old watch hears nothing of it
        self._watches: dict[str, tuple[ObservedWatch, tuple[int, int]]] = {}
        # watched directories a "deleted" event named: their watches are dead even
        # when a directory of the name is there again on the same inode number
        self._dead: set[str] = set()
        self._observer: BaseObserver | Poller | None = None
        self.backend = "none"
        self.reason: str | None = None
        self._handler = _Handler(self)
        self._refresh_wanted = threading.Event()
        self._stopping = threading.Event()
        self._refresher: threading.Thread | None = None
        self.refreshes = 0

    # -- public --------------------------------------------------------------------

    def start(self, agents: list[Config]) -> None:
        with self._lock:
            self._agents = {a.agent_name: a for a in agents}
            polling = self.mode == "polling"
            self._observer = self._new_observer(polling)
            self._observer.start()
            self.refresh()
        self._stopping.clear()
        self._refresher = threading.Thread(
            target=self._refresh_loop, name="memindex-watch-refresh", daemon=True
        )
        self._refresher.start()

    def stop(self) -> None:
        self._stopping.set()
        self._refresh_wanted.set()
        if self._refresher is not None:
            self._refresher.join(timeout=10)
            self._refresher = None
        with self._lock:
            observer, self._observer = self._observer, None
            self._watches.clear()
            self._targets = {}
        if observer is not None:  # joined outside _lock (see the module docstring)
            observer.stop()
            observer.join(timeout=5)

    def status(self) -> WatcherState:
        """Read without ``_lock``: a refresh scheduling thousands of directories
        holds it, and ``status`` must answer meanwhile."""
        return WatcherState(
            backend=self.backend, reason=self.reason, watchedDirs=len(self._watches)
        )

    def refresh(self) -> None:
        """Make the watched set match the directories that hold indexable files."""
        with self._lock:
            if self._observer is None:
                return  # stopped
            self.refreshes += 1
            wanted = self._wanted()
            if len(wanted) > self.max_dirs and self.backend != "polling":
                self._fall_back(f"{len(wanted)} directories to watch (limit {self.max_dirs})")
            self._targets = wanted
            dead: set[str] = set()
            while self._dead:  # pop by pop: the dispatcher thread may add meanwhile
                dead.add(self._dead.pop())
            for d in [
                d
                for d in self._watches
                if d not in wanted or d in dead or _ident(d) != self._watches[d][1]
            ]:
                self._unschedule(d)
            added = [d for d in sorted(wanted) if d not in self._watches]
            for d in added:
                self._schedule(d)
            if self.refreshes > 1:
                # A directory that appeared after start-up (a sessions dir created by
                # the gateway's first session, say) may hold files written before its
                # watch existed: no event will ever name them, so sync what it feeds.
                for agent, source in sorted(
                    {
                        (t.agent, "sessions" if t.role in ("sessions", "agentdb") else "memory")
                        for d in added
                        for t in wanted[d]
                        if t.role != "parent"
                    }
                ):
                    self.on_change(agent, source, "")

    def request_refresh(self) -> None:
        """Ask the refresh thread for a ``refresh()`` (safe from any thread)."""
        self._refresh_wanted.set()

    def _refresh_loop(self) -> None:
        while not self._stopping.is_set():
            self._refresh_wanted.wait()
            if self._stopping.is_set():
                return
            self._stopping.wait(0.05)  # a burst of new directories: one refresh
            self._refresh_wanted.clear()
            try:
                self.refresh()
            except Exception:  # keep watching what is watched; the next one retries
                log.exception("watch refresh failed")

    # -- internals -------------------------------------------------------------------

    def _new_observer(self, polling: bool) -> BaseObserver | Poller:
        if polling:
            self.backend = "polling"
            return Poller(self.poll_interval)
        obs = self._factory()
        self.backend = "inotify" if "Inotify" in type(obs).__name__ else type(obs).__name__
        return obs

    def _fall_back(self, reason: str) -> None:
        log.warning("file watcher falls back to polling: %s", reason)
        self.reason = reason
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=5)
        self._watches.clear()
        self._observer = self._new_observer(polling=True)
        self._observer.start()

    def _schedule(self, directory: str) -> None:
        if self._observer is None:
            return
        try:
            ident = _ident(directory)
            watch = self._observer.schedule(self._handler, directory, recursive=False)
            self._watches[directory] = (watch, ident)
        except OSError as exc:
            if exc.errno in _LIMIT_ERRNOS and self.backend != "polling":
                self._fall_back(f"{os.strerror(exc.errno or 0)} while watching {directory}")
                for d in sorted(self._targets):
                    if d not in self._watches:
                        self._schedule(d)
            elif exc.errno != errno.ENOENT:
                log.warning("cannot watch %s: %s", directory, exc)

    def _unschedule(self, directory: str) -> None:
        held = self._watches.pop(directory, None)
        if held is not None and self._observer is not None:
            with contextlib.suppress(KeyError, OSError):
                self._observer.unschedule(held[0])

    def _wanted(self) -> dict[str, frozenset[_Target]]:
        wanted: dict[str, set[_Target]] = {}

        def add(d: str, t: _Target) -> None:
            if os.path.isdir(d) and not os.path.islink(d):
                wanted.setdefault(d, set()).add(t)

        for name, cfg in self._agents.items():
            try:
                roots = roots_for(cfg)
            except Exception:  # workspace missing right now: no memory to watch yet
                roots = []
            if roots:
                ws = str(roots[0].real)
                add(ws, _Target(name, "root"))
                # the folder above it: a workspace swapped (renamed away, another put in
                # its place) is seen at once, not the old notes served for 20-40 s
                add(os.path.dirname(ws), _Target(name, "parent", watch_for=ws))
                trees = [os.path.join(ws, "memory")]
                for r in roots[1:]:
                    if r.is_file:
                        add(str(r.real.parent), _Target(name, "memory"))
                    else:
                        trees.append(str(r.real))
                for tree in trees:
                    for d in _walk_dirs(tree, cfg):
                        add(d, _Target(name, "memory"))
            for extra in cfg.extraPaths:  # a folder moved away and back, made, replaced
                target = _Target(name, "parent", watch_for=str(extra.path))
                for up in _ancestors(extra.path, _EXTRA_LEVELS):  # itself, or a folder above
                    add(up, target)
                _await(str(extra.path.parent), target, add)  # its folder gone
            sdir = cfg.sessions_dir()
            if sdir is not None:
                add(str(sdir), _Target(name, "sessions", cfg.sessions.includeRotated))
                _await(str(sdir), _Target(name, "parent"), add)
            db = cfg.transcript_db()
            if db is not None:
                add(str(db.parent), _Target(name, "agentdb"))
                _await(str(db.parent), _Target(name, "parent"), add)
        return {d: frozenset(t) for d, t in wanted.items()}

    def _event(self, path: str, is_dir: bool, kind: str) -> None:
        """Called on watchdog's dispatcher thread: takes no lock (module docstring)."""
        parent = os.path.dirname(path)
        name = os.path.basename(path)
        current = self._targets
        targets = current.get(parent, frozenset()) | current.get(path, frozenset())
        if is_dir and targets:
            if kind in ("created", "moved") and name not in DEFAULT_IGNORE_DIRS:
                self.request_refresh()  # a new directory: watch it (and what is below it)
            elif kind == "deleted" and path in current:
                self._dead.add(path)  # its watch went with it
                self.request_refresh()
        for t in targets:
            if t.role == "sessions":
                if is_transcript_name(name, t.include_rotated):
                    self.on_change(t.agent, "sessions", path)
            elif t.role == "agentdb":
                # The gateway wrote a transcript: the database or its WAL was written,
                # made or replaced. Not "closed" or "attrib": memindex's own reads
                # cause those (SQLite opens the WAL for writing even to read, and as
                # root gives it the database's owner), and reacting to them synced
                # again and again, each sync's read scheduling the next.
                if kind in _AGENTDB_WRITES and name.endswith((".sqlite", ".sqlite-wal")):
                    self.on_change(t.agent, "sessions", path)
            elif t.role == "parent":
                # its new directories matter (a refresh, above), and an extra path, or
                # a folder on the way to it, moved, deleted or made: its notes changed
                w = t.watch_for
                moved = kind in _PATH_CHANGES and is_dir
                if w and moved and (w == path or w.startswith(path + os.sep)):
                    self.on_change(t.agent, "memory", path)
            elif t.role == "root":
                if name in ROOT_FILES or (is_dir and name == MEMORY_DIR):
                    self.on_change(t.agent, "memory", path)
            elif is_dir or name.lower().endswith(".md"):
                self.on_change(t.agent, "memory", path)


_AGENTDB_WRITES = frozenset({"modified", "created", "moved", "deleted"})
_PATH_CHANGES = frozenset({"created", "moved", "deleted"})  # not a folder's "modified"


_EXTRA_LEVELS = 3  # the folders above an extra path watched for it to move


def _ancestors(path: os.PathLike[str] | str, levels: int) -> list[str]:
    """The ``levels`` folders above ``path``, nearest first (not the file system's root)."""
    out: list[str] = []
    d = os.path.dirname(os.fspath(path))
    while len(out) < levels and d and os.path.dirname(d) != d:
        out.append(d)
        d = os.path.dirname(d)
    return out


def _ident(directory: str) -> tuple[int, int]:
    """The directory's (device, inode); (0, 0) when it cannot be looked at."""
    try:
        st = os.stat(directory)
    except OSError:
        return (0, 0)
    return (st.st_dev, st.st_ino)


def _await(directory: str, target: _Target, add: Callable[[str, _Target], None]) -> None:
    """Watch the nearest existing folder above ``directory`` (three levels at most)
    while it does not exist: OpenClaw makes ``agents/<id>/agent`` at its first turn."""
    if os.path.isdir(directory):
        return
    d = directory
    for _ in range(3):
        d = os.path.dirname(d)
        if os.path.isdir(d):
            add(d, target)
            return


def _walk_dirs(top: str, cfg: Config) -> list[str]:
    """``top`` and every directory below it that is not ignored; no symlinks."""
    if not os.path.isdir(top) or os.path.islink(top):
        return []
    out = [top]
    stack = [(top, "")]
    while stack:
        d, rel = stack.pop()
        if rel.count("/") + 1 > MAX_DEPTH:
            continue  # indexing does not go deeper either
        try:
            entries = list(os.scandir(d))
        except OSError:
            continue
        for e in entries:
            try:
                if e.is_dir(follow_symlinks=False):
                    child_rel = f"{rel}/{e.name}" if rel else e.name
                    if not is_ignored(e.name, child_rel, cfg.ignore):
                        out.append(e.path)
                        stack.append((e.path, child_rel))
            except OSError:
                continue
    return out
