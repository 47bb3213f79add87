"""Voyage AI embeddings (``voyageai`` SDK): input_type document / query.

The SDK takes its base URL only as a constructor argument; its own retries are off
(``max_retries=0``) so ours apply, with Retry-After. Errors are classified by class.
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
    http_status_error,
    install_hint,
    package_fix,
    retry_after_seconds,
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
        return RateLimited(f"rate limited: {exc}", retry_after_seconds(exc.headers))
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


class VoyageProvider(RemoteProvider):
    id = "voyage"
    max_batch_items = 1000  # texts per request
    max_batch_tokens = 100_000  # well below the per-request token limits
    max_input_tokens = 32_000
    supports_batch_jobs = True
    max_batch_job_requests = 50_000

    default_model = DEFAULT_MODEL
    default_dims = DEFAULT_DIMS
    fallback_dims = 1024

    def _connect(self, api_key: str, base_url: str, timeout: float) -> None:
        try:
            from voyageai.client import Client
        except ImportError as exc:
            raise MissingCredentials(
                "the voyageai package is not installed: " + install_hint("voyage"),
                fix=package_fix("voyage"),
            ) from exc
        self._base = (base_url or "https://api.voyageai.com/v1").rstrip("/")
        self._key = api_key
        self._timeout = timeout
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

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        return self._embed(list(texts), "query")

    # -- batch jobs: Voyage's Files and Batch API (OpenAI's shape; the model and input
    # type are batch-level request_params, a line is {custom_id, body: {input}}) -------

    def _http(self, method: str, path: str, **kw: Any) -> Any:
        import requests

        try:
            r = requests.request(
                method,
                f"{self._base}{path}",
                timeout=self._timeout,
                headers={"Authorization": f"Bearer {self._key}"},
                **kw,
            )
        except requests.Timeout as exc:
            raise ProviderTimeout(f"timed out: {exc}") from exc
        except requests.RequestException as exc:
            raise TransientError(f"connection failed: {exc}") from exc
        if r.status_code >= 400:
            raise http_status_error(r.status_code, r.headers, r.text[:200])
        return r

    def submit_batch(self, items: Sequence[tuple[str, str]]) -> str:
        data = "".join(
            json.dumps({"custom_id": cid, "body": {"input": [text]}}) + "\n" for cid, text in items
        ).encode()
        try:
            fid = self._http(
                "POST",
                "/files",
                data={"purpose": "batch"},
                files={"file": ("memindex-batch.jsonl", data)},
            ).json()["id"]
            params: dict[str, Any] = {"model": self.model, "input_type": "document"}
            if self._dims_param:
                params["output_dimension"] = self._dims_param
            job = self._http(
                "POST",
                "/batches",
                json={
                    "endpoint": "/v1/embeddings",
                    "input_file_id": fid,
                    "completion_window": "12h",
                    "request_params": params,
                },
            ).json()
            return str(job["id"])
        except (ValueError, KeyError, TypeError) as exc:
            raise PermanentError(f"unreadable batch response: {exc}") from exc

    def poll_batch(self, job_id: str) -> BatchState:
        try:
            job = self._http("GET", f"/batches/{job_id}").json()
            status = str(job.get("status"))
            if status in RUNNING_STATES:
                return BatchState("running")
            if status != "completed" or not job.get("output_file_id"):
                return BatchState("failed", reason=status)
            content = self._http("GET", f"/files/{job['output_file_id']}/content").text
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise PermanentError(f"unreadable batch response: {exc}") from exc
        return parse_output_file(
            content, lambda data: self._checked([d["embedding"] for d in data], 1)[0]
        )
