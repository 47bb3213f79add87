"""Every error an embedding provider raises. Retry decisions come from the class.

    ProviderError                  base
    ├── MissingCredentials         no API key / no model file: try the next provider
    ├── PermanentError             will fail again (bad request, auth, wrong
    │                              dimensions, a response we cannot read)
    └── TransientError             may succeed later: retried with backoff
        ├── RateLimited            429 / quota; ``retry_after`` seconds if the server said
        └── ProviderTimeout        no answer in time

Foreign exceptions (HTTP clients, SDKs, llama.cpp) are translated where they are
caught, with ``raise … from exc``; nothing else escapes a provider.
"""

from __future__ import annotations

__all__ = [
    "MissingCredentials",
    "PermanentError",
    "ProviderError",
    "ProviderTimeout",
    "RateLimited",
    "TransientError",
]


class ProviderError(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class MissingCredentials(ProviderError):
    pass


class PermanentError(ProviderError):
    pass


class TransientError(ProviderError):
    pass


class RateLimited(TransientError):
    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class ProviderTimeout(TransientError):
    pass
