"""Voyage AI embeddings (``voyageai`` SDK): input_type document / query.

The SDK takes its base URL only as a constructor argument; its own retries are off
(``max_retries=0``) so ours apply, with Retry-After. Errors are classified by class.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .base import EmbeddingProvider, Vectors
from .errors import (
    MissingCredentials,
    PermanentError,
    ProviderError,
    ProviderTimeout,
    RateLimited,
    TransientError,
)

__all__ = ["VoyageProvider"]

DEFAULT_MODEL = "voyage-3.5"
DEFAULT_DIMS = {
    "voyage-3.5": 1024,
    "voyage-3.5-lite": 1024,
    "voyage-3-large": 1024,
    "voyage-3": 1024,
    "voyage-3-lite": 512,
    "voyage-4-large": 1024,
}


def translate(exc: Exception) -> ProviderError:
    import voyageai.error as ve

    if isinstance(exc, ve.RateLimitError):
        retry = None
        try:
            value = (exc.headers or {}).get("retry-after") or (exc.headers or {}).get("Retry-After")
            retry = float(value) if value is not None else None
        except (TypeError, ValueError):
            retry = None
        return RateLimited(f"rate limited: {exc}", retry)
    if isinstance(exc, ve.Timeout):
        return ProviderTimeout(f"timed out: {exc}")
    if isinstance(
        exc, ve.ServiceUnavailableError | ve.ServerError | ve.TryAgain | ve.APIConnectionError
    ):
        return TransientError(f"{type(exc).__name__}: {exc}")
    if isinstance(exc, ve.AuthenticationError):
        return MissingCredentials(f"rejected credentials: {exc}")
    if isinstance(exc, ve.VoyageError):
        status = getattr(exc, "http_status", None) or 0
        if status >= 500:
            return TransientError(f"HTTP {status}: {exc}")
        return PermanentError(f"{type(exc).__name__}: {exc}")
    return PermanentError(f"unreadable response: {type(exc).__name__}: {exc}")


class VoyageProvider(EmbeddingProvider):
    id = "voyage"
    max_batch_items = 1000  # texts per request
    max_batch_tokens = 100_000  # well below the per-request token limits
    max_input_tokens = 32_000

    def __init__(
        self,
        api_key: str,
        *,
        model: str = "",
        dims: int = 0,
        base_url: str = "",
        timeout: float = 60.0,
    ) -> None:
        try:
            from voyageai.client import Client
        except ImportError as exc:
            raise MissingCredentials(
                "the voyageai package is not installed: pip install 'memindex[voyage]'"
            ) from exc
        model = model or DEFAULT_MODEL
        self._dims_param = dims or None
        super().__init__(model=model, dims=dims or DEFAULT_DIMS.get(model, 1024), endpoint=base_url)
        self._client: Any = Client(
            api_key=api_key, max_retries=0, timeout=timeout, base_url=base_url or None
        )

    def _embed(self, texts: Sequence[str], input_type: str) -> Vectors:
        try:
            resp = self._client.embed(
                list(texts),
                model=self.model,
                input_type=input_type,
                truncation=True,
                output_dimension=self._dims_param,
            )
            values = resp.embeddings
        except Exception as exc:
            raise translate(exc) from exc
        return self._checked(values, len(texts))

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        return self._embed(texts, "document")

    def embed_query(self, text: str) -> Vectors:
        return self._embed([text], "query")
