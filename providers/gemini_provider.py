"""Gemini embeddings (``google-genai``): RETRIEVAL_DOCUMENT / RETRIEVAL_QUERY.

The SDK defaults to API version v1; embeddings with task types and output
dimensionality are served under v1beta, so it is set explicitly. Up to 100 texts per
``batchEmbedContents`` call. Errors are classified by class and HTTP code.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

from .base import RemoteProvider, Vectors
from .batch import BatchState
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

__all__ = ["GeminiProvider"]

DEFAULT_MODEL = "gemini-embedding-001"
DEFAULT_DIMS = {"gemini-embedding-001": 3072, "text-embedding-004": 768}


def translate(exc: Exception) -> ProviderError:
    import httpx
    from google.genai import errors as ge

    if isinstance(exc, ge.APIError):
        code = int(getattr(exc, "code", 0) or 0)
        if code == 429:
            headers = getattr(getattr(exc, "response", None), "headers", None)
            return RateLimited(f"rate limited: {exc}", retry_after_seconds(headers))
        if code in (401, 403):
            return MissingCredentials(f"rejected credentials: {exc}")
        if code in (408, 409) or code >= 500:
            return TransientError(f"HTTP {code}: {exc}")
        return PermanentError(f"HTTP {code}: {exc}")
    if isinstance(exc, httpx.TimeoutException):
        return ProviderTimeout(f"timed out: {exc}")
    if isinstance(exc, httpx.TransportError):
        return TransientError(f"connection failed: {exc}")
    return PermanentError(f"unreadable response: {type(exc).__name__}: {exc}")


class GeminiProvider(RemoteProvider):
    id = "gemini"
    max_batch_items = 100  # texts per batchEmbedContents call
    max_batch_tokens = 100 * 2048
    max_input_tokens = 2048
    supports_batch_jobs = True
    max_batch_job_requests = 5_000  # inline requests per job (kept well below 20 MB)

    default_model = DEFAULT_MODEL
    default_dims = DEFAULT_DIMS
    fallback_dims = 3072

    def _connect(self, api_key: str, base_url: str, timeout: float) -> None:
        try:
            from google import genai
            from google.genai import types
        except ImportError as exc:
            raise MissingCredentials(
                "the google-genai package is not installed: " + install_hint("gemini"),
                fix=package_fix("gemini"),
            ) from exc
        self._types: Any = types
        options = types.HttpOptions(
            api_version="v1beta", timeout=int(timeout * 1000), base_url=base_url or None
        )
        self._client: Any = genai.Client(api_key=api_key, http_options=options)

    def _embed(self, texts: Sequence[str], task: str) -> Vectors:
        try:
            resp = self._client.models.embed_content(
                model=self.model,
                contents=list(texts),
                config=self._types.EmbedContentConfig(
                    task_type=task, output_dimensionality=self._dims_param
                ),
            )
            values = [e.values for e in resp.embeddings or []]
        except Exception as exc:
            raise translate(exc) from exc
        return self._checked(values, len(texts))

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        return self._embed(texts, "RETRIEVAL_DOCUMENT")

    def embed_query(self, text: str) -> Vectors:
        return self._embed([text], "RETRIEVAL_QUERY")

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        return self._embed(list(texts), "RETRIEVAL_QUERY")

    # -- batch jobs (inline requests; results come back in order) ---------------------

    def submit_batch(self, items: Sequence[tuple[str, str]]) -> str:
        t = self._types
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the SDK marks this API experimental
                job = self._client.batches.create_embeddings(
                    model=self.model,
                    src=t.EmbeddingsBatchJobSource(
                        inlined_requests=t.EmbedContentBatch(
                            contents=[text for _, text in items],
                            config=t.EmbedContentConfig(
                                task_type="RETRIEVAL_DOCUMENT",
                                output_dimensionality=self._dims_param,
                            ),
                        )
                    ),
                )
        except Exception as exc:
            raise translate(exc) from exc
        return str(job.name)

    def poll_batch(self, job_id: str) -> BatchState:
        try:
            job = self._client.batches.get(name=job_id)
        except Exception as exc:
            raise translate(exc) from exc
        state = str(getattr(job.state, "name", job.state))
        if state in ("JOB_STATE_PENDING", "JOB_STATE_RUNNING", "JOB_STATE_QUEUED"):
            return BatchState("running")
        if state != "JOB_STATE_SUCCEEDED" or job.dest is None:
            return BatchState("failed", reason=state)
        ordered: list[Vectors | None] = []
        for r in job.dest.inlined_embed_content_responses or []:
            try:
                values = r.response.embedding.values if r.response else None
                ordered.append(self._checked([values], 1)[0] if values else None)
            except (PermanentError, AttributeError):
                ordered.append(None)  # this item is embedded directly
        return BatchState("done", ordered=ordered)
