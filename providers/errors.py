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

import shlex
import sys
from pathlib import Path
from typing import Any

__all__ = [
    "http_status_error",
    "install_hint",
    "package_fix",
    "retry_after_seconds",
    "MissingCredentials",
    "PermanentError",
    "ProviderError",
    "ProviderTimeout",
    "RateLimited",
    "TransientError",
]


class ProviderError(Exception):
    """``fix``: what the user can do about it (a command, a setting), when known."""

    def __init__(self, message: str, fix: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.fix = fix


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


def retry_after_seconds(headers: Any) -> float | None:
    """A response's ``Retry-After`` in seconds (delta-seconds or an HTTP date), or
    None when it is missing or unreadable. ``headers``: any mapping with ``get``
    (httpx's and requests' are case-insensitive; a plain dict is tried both ways)."""
    if headers is None:
        return None
    try:
        value = headers.get("retry-after") or headers.get("Retry-After")
    except (AttributeError, TypeError):
        return None
    if value is None:
        return None
    text = str(value).strip()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    from email.utils import parsedate_to_datetime

    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    import time

    return max(0.0, when.timestamp() - time.time())


def http_status_error(status: int, headers: Any, detail: str, what: str = "") -> ProviderError:
    """The error for an HTTP error ``status`` from a provider's endpoint (``what``
    prefixes the message, e.g. "rerank "): 429 is ``RateLimited`` with the response's
    Retry-After, 401/403 ``MissingCredentials``, 408/409 and 5xx ``TransientError``,
    anything else ``PermanentError`` with ``detail`` (the start of the body)."""
    if status == 429:
        return RateLimited(f"{what}rate limited", retry_after_seconds(headers))
    if status in (401, 403):
        return MissingCredentials(f"{what}rejected credentials: HTTP {status}")
    if status >= 500 or status in (408, 409):
        return TransientError(f"{what}HTTP {status}")
    return PermanentError(f"{what}HTTP {status}: {detail}")


def package_fix(extra: str) -> str:
    """The fix for a provider whose package is missing: installing its extra."""
    hint = install_hint(extra)
    if extra == "local":
        hint += " (it compiles llama-cpp-python, about 15-20 minutes once)"
    return hint


def install_hint(extra: str) -> str:
    """The command that adds the optional ``extra`` to this installation, with this
    interpreter's pip: in a checkout (its pyproject.toml beside the packages), an
    editable install of the checkout (a checkout is no package on the index); else
    memindex's own name with the extra."""
    root = Path(__file__).resolve().parent.parent
    python = shlex.quote(sys.executable)
    if (root / "pyproject.toml").is_file() and (root / "indexer").is_dir():
        return f"{python} -m pip install -e {shlex.quote(f'{root}[{extra}]')}"
    return f"{python} -m pip install 'memindex[{extra}]'"
