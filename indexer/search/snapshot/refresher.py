"""One background run at a time, spaced out: the daemon's in-memory snapshot
(live.py) is caught up this way while searches go on over what is there, so a
request never waits for it and a busy writer does not keep a core busy with it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = ["Refresher"]


class Refresher:
    def __init__(self, name: str) -> None:
        self.name = name
        self._lock = threading.Lock()
        self.busy = False
        self._ended = 0.0  # monotonic time the last run ended
        self._took = 0.0  # how long it ran

    def start(self, target: Callable[..., None], *args: Any, min_interval_s: float = 0.0) -> bool:
        """Run ``target(*args)`` on a thread of its own unless a run is going on or
        the last one ended less than ``max(min_interval_s, 2 x its duration)`` ago.
        True if it started. ``target`` reports its own errors."""
        with self._lock:
            wait = max(min_interval_s, 2 * self._took)
            if self.busy or time.monotonic() - self._ended < wait:
                return False
            self.busy = True
        threading.Thread(target=self._run, args=(target, args), name=self.name, daemon=True).start()
        return True

    def _run(self, target: Callable[..., None], args: tuple[Any, ...]) -> None:
        t0 = time.monotonic()
        try:
            target(*args)
        finally:
            with self._lock:
                self.busy = False
                self._ended = time.monotonic()
                self._took = self._ended - t0
