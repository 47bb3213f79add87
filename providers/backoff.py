"""One back-off for every wait that grows: a provider call tried again, a batch job
polled, a daemon task retried after a failure.

``Backoff`` is the rule (first wait, cap, factor, full jitter or none);
``delay(n)`` is the wait before the n-th try again (n = 1, 2, …). ``Waits`` is one
running sequence of it (``next()`` after each miss, ``reset()`` after a success).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

__all__ = ["Backoff", "Waits"]


@dataclass(frozen=True)
class Backoff:
    initial: float = 1.0  # seconds before the first try again
    maximum: float = 60.0  # no wait is longer
    factor: float = 2.0
    jitter: bool = False  # full jitter: a uniform draw in [0, the wait]

    def delay(self, attempt: int, rng: random.Random | None = None) -> float:
        """The wait before try again number ``attempt`` (1 is the first)."""
        n = max(1, attempt) - 1
        # capped before the power can overflow on a long run of failures
        wait = self.maximum if n > 64 else min(self.maximum, self.initial * self.factor**n)
        if self.jitter:
            wait = (rng or random).uniform(0.0, wait)
        return float(wait)

    def waits(self) -> Waits:
        return Waits(self)


@dataclass
class Waits:
    """A running sequence of one ``Backoff``: how many misses in a row so far."""

    rule: Backoff
    misses: int = field(default=0)

    def next(self) -> float:
        """One more miss: the wait before the next try."""
        self.misses += 1
        return self.rule.delay(self.misses)

    def reset(self) -> None:
        self.misses = 0
