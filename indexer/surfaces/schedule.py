"""When an agent's writer runs each of its tasks: the one place the due times live.

Two threads use it: the watcher enters once, through ``changed`` (a file or a
transcript changed), and the writer thread through the rest. The due times both
threads touch are read and written under one lock, so an event that lands while the
writer takes its task is kept for the next pass instead of being cleared with it.
Times are ``time.monotonic()`` seconds; ``None`` means not planned.
"""

from __future__ import annotations

import threading
from typing import Literal

from providers.backoff import Backoff

__all__ = ["Schedule", "Task"]

Task = Literal["memory", "sessions", "embed"]

# Open batch jobs polled 1 s, 2 s, 4 s … 60 s apart while nothing else is embedded.
_BATCH_POLLS = Backoff(initial=1.0, maximum=60.0)


class Schedule:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._due: dict[Task, float | None] = {"memory": None, "sessions": None, "embed": None}
        self._memory_first: float | None = None  # the first event of a memory burst
        self._polls = _BATCH_POLLS.waits()
        self.backfill = True  # first pass: everything, transcripts below thresholds too
        self.sessions_all = False  # the next session sync reads every delta (a backfill's rest)
        self.sessions_more = False  # a transcript is being read in slices: more to come
        self.transcript_tails = 0  # the last sessions pass's uncommitted (searchable) tails
        self.next_rescan: float | None = None  # the next sync with no event
        self.lock_check = 0.0  # when the writer lock is next checked
        self.index_check = 0.0  # when the index path is next looked at (after a failure)
        self.index_seen: tuple[object, object] | None = None  # what was there then
        self.rebuild_queued = False  # a forced rebuild of a damaged index is queued

    # -- the watcher's entry --------------------------------------------------------

    def changed(self, kind: str, now: float, debounce: float, *, retrying: bool) -> None:
        """A watched file changed. Memory files: a trailing debounce, but never later
        than two periods after the burst's first event (a file written every second
        still gets indexed). Transcripts: within the debounce, brought forward from a
        later planned look (a tail's recheck) unless a failure's back-off
        (``retrying``) set that time."""
        with self._lock:
            if kind == "memory":
                if self._memory_first is None:
                    self._memory_first = now
                self._due["memory"] = min(now + debounce, self._memory_first + 2 * debounce)
                return
            due = self._due["sessions"]
            if due is None or (due > now + debounce and not retrying):
                self._due["sessions"] = now + debounce

    # -- the writer's side ----------------------------------------------------------

    def due(self, task: Task) -> float | None:
        return self._due[task]

    def take(self, task: Task, now: float) -> bool:
        """Whether ``task`` is due at ``now``; if so it is no longer planned (the
        caller runs it)."""
        with self._lock:
            at = self._due[task]
            if at is None or at > now:
                return False
            self._due[task] = None
            if task == "memory":
                self._memory_first = None
            return True

    def plan(self, task: Task, at: float) -> None:
        """Run ``task`` at ``at`` (replaces what was planned)."""
        with self._lock:
            self._due[task] = at

    def plan_if_free(self, task: Task, at: float) -> None:
        """Run ``task`` at ``at`` unless something is planned already."""
        with self._lock:
            if self._due[task] is None:
                self._due[task] = at

    def wait(self, now: float, longest: float = 1.0) -> float:
        """Seconds until the next planned task (at most ``longest``)."""
        with self._lock:
            planned = [at for at in self._due.values() if at is not None]
        return min([longest, *(max(0.0, at - now) for at in planned)])

    def rescan(self, now: float, every: float, *, memory_ok: bool, sessions_ok: bool) -> None:
        """A memory and transcript sync every ``every`` seconds even if no event came
        (the watcher can miss changes for good). A coming memory sync restarts the
        count; a task waiting for its retry after a failure keeps its back-off."""
        if not every:
            return
        if self.next_rescan is None or self._due["memory"] is not None:
            self.next_rescan = now + every  # a sync is coming anyway: count from there
            return
        if now < self.next_rescan:
            return
        self.next_rescan = now + every
        if memory_ok:
            self.plan("memory", now)
        if sessions_ok:
            self.plan_if_free("sessions", now)

    def batch_polled(self, now: float) -> None:
        """Batch jobs are still open: poll them later, each time a little later."""
        self.plan("embed", now + self._polls.next())

    def batch_done(self) -> None:
        self._polls.reset()

    @property
    def pending(self) -> bool:
        """Writer work planned or under way (``status`` is not current meanwhile):
        uncommitted transcript tails count until committed, also while the pass that
        rechecks them runs (it took their due time)."""
        return (
            self.backfill
            or self._due["memory"] is not None
            or self._due["sessions"] is not None
            or self.sessions_more
            or self.transcript_tails > 0
        )
