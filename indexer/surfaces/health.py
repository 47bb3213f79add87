"""What the writer tells ``status`` about its work: per-task errors, retry backoff,
and a heartbeat that shows a task making no progress.

Each task (``memory``, ``sessions``, ``embedding``, and ``writer``: holding the
agent's writer lock) keeps its own last error, cleared
only by a success of that task, so one task's success never hides another's failure.
A task marks itself busy with ``working()``; the ``should_stop`` it yields is what the
task calls between units of work, and each call beats the heartbeat. A busy task with
no beat for ``STUCK_AFTER_S`` is reported as ``stuck``.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import NotRequired, TypedDict

from indexer.api.responses import ProgressState
from providers.backoff import Backoff

__all__ = ["STUCK_AFTER_S", "TASKS", "TaskHealth"]

STUCK_AFTER_S = 300.0  # a task with no progress for this long is reported as stuck
_RETRIES = Backoff(initial=2.0, maximum=300.0)  # a failed task tried again
TASKS = ("memory", "sessions", "embedding", "writer")  # writer: its one-writer lock


class HealthReport(TypedDict):
    """An agent's writer as ``status`` shows it."""

    dirty: bool  # work is pending or failed
    busy: dict[str, object] | None  # {task, forS, noProgressS} while the writer works
    stuck: bool  # no progress for STUCK_AFTER_S
    lastError: str | None
    errors: dict[str, str | None]  # per task: memory, sessions, writer
    progress: ProgressState | None  # files read or chunks embedded so far, rate, time left
    # transcripts whose newest lines are searchable but not committed yet (sessions.
    # deltaBytes / deltaMessages / idleFlushMs): pending work, not a delay of search
    transcriptTails: NotRequired[int]


class TaskHealth:
    """One agent's writer health (the indexer thread writes, request threads read)."""

    def __init__(self) -> None:
        self.errors: dict[str, str | None] = dict.fromkeys(TASKS)  # task -> last error
        self.error_at: dict[str, float] = {}
        self.failures: dict[str, int] = dict.fromkeys(TASKS, 0)  # in a row, for backoff
        self.busy: tuple[str, float] | None = None  # (task, monotonic start)
        self.heartbeat = time.monotonic()  # the writer's last sign of progress

    @property
    def last_error(self) -> str | None:
        """The most recent error of any task that has not succeeded since."""
        live = [(self.error_at.get(t, 0.0), e) for t, e in self.errors.items() if e]
        return max(live)[1] if live else None

    def failed(self, task: str, exc: BaseException) -> float:
        """Record a task's failure; returns the seconds to wait before retrying."""
        self.errors[task] = f"{task}: {type(exc).__name__}: {exc}"[:500]
        self.error_at[task] = time.time()
        self.failures[task] += 1
        return _RETRIES.delay(self.failures[task])

    def succeeded(self, task: str) -> None:
        self.errors[task] = None
        self.failures[task] = 0

    def left_behind(self, task: str, left: dict[str, str]) -> None:
        """``task`` ran, and these items (path -> reason) are still left to try again:
        the task's error (``status`` dirty) while any is, without the backoff of a
        failure (the rest of its work goes on as usual)."""
        if not left:
            self.succeeded(task)
            return
        path = min(left)
        more = f" (and {len(left) - 1} more)" if len(left) > 1 else ""
        error = f"{task}: not indexed, tried again each sync: {path}: {left[path]}{more}"[:500]
        if self.errors[task] != error:
            self.errors[task] = error
            self.error_at[task] = time.time()
        self.failures[task] = 0

    @contextlib.contextmanager
    def working(self, task: str, stop: threading.Event) -> Iterator[Callable[[], bool]]:
        """Mark ``task`` busy; yields the should_stop it must call between units of
        work, which also beats the heartbeat."""

        def should_stop() -> bool:
            self.heartbeat = time.monotonic()
            return stop.is_set()

        self.busy = (task, time.monotonic())
        self.heartbeat = time.monotonic()
        try:
            yield should_stop
        finally:
            self.busy = None

    def report(self, pending: bool) -> HealthReport:
        """dirty / busy / stuck / lastError / errors as ``status`` shows them;
        ``pending``: work is scheduled that has not run yet."""
        now = time.monotonic()
        busy = None
        stuck = False
        if self.busy is not None:
            task, since = self.busy
            quiet = now - self.heartbeat
            stuck = quiet > STUCK_AFTER_S
            busy = {"task": task, "forS": round(now - since, 1), "noProgressS": round(quiet, 1)}
        dirty = pending or any(self.errors[t] for t in ("memory", "sessions", "writer"))
        last = self.last_error
        if stuck and busy is not None:
            last = f"{busy['task']}: no progress for {busy['noProgressS']:.0f}s (stuck?)"
        return HealthReport(
            dirty=dirty or stuck,
            busy=busy,
            stuck=stuck,
            lastError=last,
            errors=dict(self.errors),
            progress=None,
        )
