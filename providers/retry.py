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

from tenacity import RetryCallState, Retrying, retry_if_exception_type, stop_after_attempt
from tenacity.wait import wait_random_exponential

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
    backoff = wait_random_exponential(multiplier=policy.initial, max=policy.maximum)

    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, RateLimited) and exc.retry_after is not None:
            return float(min(max(exc.retry_after, 0.0), policy.max_retry_after))
        return float(backoff(state))

    retrying = Retrying(
        stop=stop_after_attempt(policy.attempts),
        wait=wait,
        retry=retry_if_exception_type(TransientError),
        reraise=True,
        sleep=sleep,
    )
    return retrying(fn)
