"""OpenAI embeddings (``openai`` SDK): direct calls and the Batch API.

The SDK's own retries are off (``max_retries=0``): retries are ours (retry.py), so
Retry-After is honoured and every error is classified once, here, by exception type.
Vectors are requested as floats (the SDK otherwise asks for base64).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .base import RemoteProvider, Vectors
from .batch import RUNNING_STATES, BatchState, parse_output_file
from .errors import (
    MissingCredentials,
    PermanentError,
    ProviderError,
    ProviderTimeout,
    RateLimited,
    TransientError,
    install_hint,
    package_fix,
    retry_after_seconds,
)

__all__ = ["OpenAIProvider"]

DEFAULT_MODEL = "text-embedding-3-small"
DEFAULT_DIMS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}


def translate(exc: Exception) -> ProviderError:
    """Map an ``openai`` exception to our error tree (by class, never by message)."""
    import openai

    if isinstance(exc, openai.RateLimitError):
        return RateLimited(f"rate limited: {exc}", retry_after_seconds(exc.response.headers))
    if isinstance(exc, openai.APITimeoutError):
        return ProviderTimeout(f"timed out: {exc}")
    if isinstance(exc, openai.APIConnectionError):
        return TransientError(f"connection failed: {exc}")
    if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
        return MissingCredentials(f"rejected credentials: {exc}")
    if isinstance(exc, openai.InternalServerError):
        return TransientError(f"server error: {exc}")
    if isinstance(exc, openai.APIStatusError):
        if exc.status_code in (408, 409) or exc.status_code >= 500:
            return TransientError(f"HTTP {exc.status_code}: {exc}")
        return PermanentError(f"HTTP {exc.status_code}: {exc}")
    if isinstance(exc, openai.APIResponseValidationError | ValueError | KeyError | TypeError):
        return PermanentError(f"unreadable response: {exc}")
    return PermanentError(f"{type(exc).__name__}: {exc}")


class OpenAIProvider(RemoteProvider):
    id = "openai"
    max_batch_items = 2048  # inputs per request
    max_batch_tokens = 250_000  # below the 300k tokens per request limit
    max_input_tokens = 8191
    supports_batch_jobs = True
    max_batch_job_requests = 50_000  # requests per batch job

    default_model = DEFAULT_MODEL
    default_dims = DEFAULT_DIMS
    fallback_dims = 1536

    def _connect(self, api_key: str, base_url: str, timeout: float) -> None:
        try:
            import openai
        except ImportError as exc:
            raise MissingCredentials(
                "the openai package is not installed: " + install_hint("openai"),
                fix=package_fix("openai"),
            ) from exc
        self._client = openai.OpenAI(
            api_key=api_key, base_url=base_url or None, max_retries=0, timeout=timeout
        )

    def _params(self, texts: Sequence[str]) -> dict[str, Any]:
        p: dict[str, Any] = {"model": self.model, "input": list(texts), "encoding_format": "float"}
        if self._dims_param:
            p["dimensions"] = self._dims_param
        return p

    def _vectors(self, data: Sequence[Any], n: int) -> Vectors:
        rows = sorted(data, key=lambda d: d["index"] if isinstance(d, dict) else d.index)
        mat = [r["embedding"] if isinstance(r, dict) else r.embedding for r in rows]
        return self._checked(mat, n)

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        try:
            resp = self._client.embeddings.create(**self._params(texts))
            data = resp.data
        except Exception as exc:
            raise translate(exc) from exc
        return self._vectors(data, len(texts))

    # -- Batch API -------------------------------------------------------------------

    def submit_batch(self, items: Sequence[tuple[str, str]]) -> str:
        """Upload one JSONL request per (custom_id, text) and create the batch job."""
        lines = [
            json.dumps(
                {
                    "custom_id": cid,
                    "method": "POST",
                    "url": "/v1/embeddings",
                    "body": self._params([text]),
                }
            )
            for cid, text in items
        ]
        try:
            f = self._client.files.create(
                file=("memindex-batch.jsonl", ("\n".join(lines) + "\n").encode()),
                purpose="batch",
            )
            job = self._client.batches.create(
                input_file_id=f.id, endpoint="/v1/embeddings", completion_window="24h"
            )
            return str(job.id)
        except Exception as exc:
            raise translate(exc) from exc

    def poll_batch(self, job_id: str) -> BatchState:
        try:
            job = self._client.batches.retrieve(job_id)
            status = str(job.status)
            if status in RUNNING_STATES:
                return BatchState("running")
            if status != "completed" or not job.output_file_id:
                return BatchState("failed", reason=status)
            content = self._client.files.content(job.output_file_id).text
        except Exception as exc:
            raise translate(exc) from exc
        return parse_output_file(content, lambda data: self._vectors(data, 1)[0])

    def close(self) -> None:
        self._client.close()
