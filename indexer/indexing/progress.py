"""How far a long piece of writing has got, for a person waiting on it: the files of a
sync, then the chunks of an embedding backlog, with the rate and the time left.

One writer thread updates a ``WorkProgress``; ``status`` (another thread) reads its
``state()``, and the CLI's progress line listens to every update. The embedding
figures span a whole backlog, however many passes (the daemon's two-second slices)
it takes: a backlog starts when chunks are pending and ends when none are."""

from __future__ import annotations

import time
from collections.abc import Callable

from indexer.api.responses import ProgressState

__all__ = ["ProgressState", "WorkProgress"]


class WorkProgress:
    def __init__(self, listener: Callable[[ProgressState], None] | None = None) -> None:
        self.listener = listener
        self._phase: str | None = None
        self._done = 0
        self._total = 0
        self._t0 = 0.0

    def files(self, done: int, total: int) -> None:
        """A sync's files (the pipeline's progress callback)."""
        if self._phase != "files" or done < self._done:
            self._begin("files")
        self._done, self._total = done, total
        self._tell()
        if done >= total:
            self.finished()

    def embedding(self, pending: int) -> None:
        """An embedding pass starts with ``pending`` chunks without vectors: a new
        backlog, or more of the one under way (its total grows by what arrived)."""
        if self._phase != "embedding":
            self._begin("embedding")
        self._total = self._done + pending
        self._tell()

    def embedded(self, n: int) -> None:
        self._done += n
        self._total = max(self._total, self._done)
        self._tell()

    def finished(self) -> None:
        """Nothing is left (no file to read, no chunk pending)."""
        self._phase = None

    def state(self) -> ProgressState | None:
        phase, done, total, t0 = self._phase, self._done, self._total, self._t0
        if phase is None:
            return None
        elapsed = time.monotonic() - t0
        rate = done / elapsed if done and elapsed >= 0.5 else None
        eta = max(0, total - done) / rate if rate else None
        return ProgressState(
            phase=phase,
            done=done,
            total=max(total, done),
            perSecond=None if rate is None else round(rate, 1),
            etaS=None if eta is None else round(eta, 1),
        )

    def _begin(self, phase: str) -> None:
        self._phase, self._done, self._total, self._t0 = phase, 0, 0, time.monotonic()

    def _tell(self) -> None:
        if self.listener is not None:
            st = self.state()
            if st is not None:
                self.listener(st)
