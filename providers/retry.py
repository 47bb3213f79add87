"""Retries for provider calls: exponential backoff with jitter, Retry-After honoured.

Only TransientError (and its RateLimited / ProviderTimeout) is retried; the wait for a
RateLimited error that carries ``retry_after`` is exactly that (capped), otherwise
exponential with full jitter.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from .backoff import Backoff
from .errors import RateLimited, TransientError

__all__ = ["RetryPolicy", "call_with_retries"]

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 5
    initial: float = 0.5  # seconds
    maximum: float = 30.0
    max_retry_after: float = 120.0


def call_with_retries(
    fn: Callable[[], T],
    policy: RetryPolicy = RetryPolicy(),
    *,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    backoff = Backoff(policy.initial, policy.maximum, jitter=True)
    attempt = 1
    while True:
        try:
            return fn()
        except TransientError as exc:
            if attempt >= policy.attempts:
                raise
            if isinstance(exc, RateLimited) and exc.retry_after is not None:
                wait = min(max(exc.retry_after, 0.0), policy.max_retry_after)
            else:
                wait = backoff.delay(attempt)
            sleep(float(wait))
            attempt += 1
