"""The embedding provider contract.

A provider turns texts into L2-normalised float32 vectors. ``embed_documents`` is the
one method to implement; it receives at most ``max_batch_items`` texts whose
estimated tokens stay within ``max_batch_tokens`` (``batches()`` makes such groups).
Capabilities are class attributes; ``key()`` identifies what makes two vectors
comparable (provider, model, endpoint, dimensions, line windows) and keys the
embedding cache.

Line windows (``line_windows``, on for the local model): a document's vector is the
normalised sum of its own vector and the mean of the vectors of its windows of
``WINDOW_LINES`` non-empty lines (every ``WINDOW_STRIDE`` lines). A small model
trained on sentences averages a 400-token chunk into a blur; the windows keep the
line that answers a question visible in the chunk's one vector (docs/RETRIEVAL.md,
"Line windows (kept)").
"""

from __future__ import annotations

import hashlib
import json
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from .batch import BatchState
from .errors import PermanentError

__all__ = [
    "EmbeddingProvider",
    "RemoteProvider",
    "Vectors",
    "batches",
    "line_windows",
    "normalize",
]

Vectors = npt.NDArray[np.float32]  # shape (n, dims), rows L2-normalised


def normalize(m: npt.ArrayLike) -> Vectors:
    arr = np.asarray(m, dtype=np.float32)
    if arr.ndim == 1:
        arr = arr[None, :]
    arr = np.nan_to_num(arr, nan=0.0, posinf=0.0, neginf=0.0)
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    out: Vectors = (arr / norms).astype(np.float32)
    return out


def estimate_tokens(text: str) -> int:
    """A cheap upper-bound-ish token estimate for request sizing (UTF-8 bytes / 3)."""
    return len(text.encode("utf-8")) // 3 + 1


WINDOW_LINES = 3
WINDOW_STRIDE = 2


def line_windows(text: str) -> list[str]:
    """The windows of ``WINDOW_LINES`` non-empty lines of ``text``, one every
    ``WINDOW_STRIDE`` lines; none for a text of no more lines than one window."""
    lines = [line for line in text.split("\n") if line.strip()]
    if len(lines) <= WINDOW_LINES:
        return []
    last = len(lines) - WINDOW_LINES
    starts = list(range(0, last + 1, WINDOW_STRIDE))
    if starts[-1] != last:
        starts.append(last)  # the last lines get a window of their own
    return ["\n".join(lines[i : i + WINDOW_LINES]) for i in starts]


def batches(texts: Sequence[str], max_items: int, max_tokens: int) -> Iterator[range]:
    """Index ranges of consecutive texts that fit one request."""
    start = 0
    while start < len(texts):
        end = start
        tokens = 0
        while end < len(texts) and end - start < max_items:
            t = estimate_tokens(texts[end])
            if end > start and tokens + t > max_tokens:
                break
            tokens += t
            end += 1
        yield range(start, end)
        start = end


class EmbeddingProvider(ABC):
    id: str = "abstract"
    max_batch_items: int = 64
    max_batch_tokens: int = 100_000
    max_input_tokens: int = 8192
    supports_batch_jobs: bool = False
    max_batch_job_requests: int = 0
    line_windows: bool = False  # documents: own vector + mean of line windows' (above)

    def __init__(self, model: str, dims: int, endpoint: str = "") -> None:
        self.model = model
        self.dims = dims
        self.endpoint = endpoint

    @abstractmethod
    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        """Vectors for document chunks, in order; one request's worth at most."""

    def embed_query(self, text: str) -> Vectors:
        """The vector of a search query (providers with query input types override)."""
        return self.embed_documents([text])

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        """Vectors of several queries in one request (``calibration``); as
        ``embed_query`` embeds each."""
        return self.embed_documents(list(texts))

    def embed_all(self, texts: Sequence[str]) -> Vectors:
        """Any number of documents, split into requests within the provider's caps
        (with ``line_windows``: each one's windows embedded too, and mixed in)."""
        if not self.line_windows:
            return self._embed_many(texts)
        windows = [line_windows(t) for t in texts]
        flat = list(texts) + [w for ws in windows for w in ws]
        vecs = self._embed_many(flat)
        out = vecs[: len(texts)].copy()
        at = len(texts)
        for n, ws in enumerate(windows):
            if ws:
                mean = normalize(vecs[at : at + len(ws)].mean(axis=0))[0]
                out[n] = out[n] + mean
                at += len(ws)
        return normalize(out)

    def _embed_many(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        parts = [
            self.embed_documents([texts[i] for i in r])
            for r in batches(texts, self.max_batch_items, self.max_batch_tokens)
        ]
        return np.concatenate(parts, axis=0)

    def _checked(self, matrix: npt.ArrayLike, n: int) -> Vectors:
        """``n`` vectors of ``dims`` from a provider's answer, normalised, or
        PermanentError (a wrong shape is never stored)."""
        try:
            arr = np.asarray(matrix, dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise PermanentError(f"{self.id} returned vectors that are not numbers") from exc
        if arr.shape != (n, self.dims):
            raise PermanentError(
                f"{self.id}: expected {n} vectors of {self.dims} dims, got {arr.shape}"
            )
        if not np.isfinite(arr).all():  # never stored: NaN breaks every search after it
            raise PermanentError(
                f"{self.id} ({self.model}) returned vectors that are not finite numbers "
                "(NaN or infinity): the model is broken or not an embedding model"
            )
        if n and not np.abs(arr).sum(axis=1).all():
            raise PermanentError(f"{self.id} ({self.model}) returned an all-zero vector")
        return normalize(arr)

    def submit_batch(self, items: Sequence[tuple[str, str]]) -> str:
        """Create a batch job for (custom id, text) pairs; returns the job id."""
        raise PermanentError(f"{self.id} has no batch API")

    def poll_batch(self, job_id: str) -> BatchState:
        """The job's state; when done, its vectors by custom id."""
        raise PermanentError(f"{self.id} has no batch API")

    def key(self) -> str:
        ident = {
            "provider": self.id,
            "model": self.model,
            "endpoint": self.endpoint,
            "dims": self.dims,
        }
        if self.line_windows:  # other vectors than the model's own for the same text
            ident["lineWindows"] = f"{WINDOW_LINES}/{WINDOW_STRIDE}" + self.window_key()
        return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:24]

    def window_key(self) -> str:
        """How the windows are embedded, when not as texts of their own."""
        return ""

    def describe(self) -> dict[str, Any]:
        return {
            "provider": self.id,
            "model": self.model,
            "dims": self.dims,
            "endpoint": self.endpoint or None,
        }

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources (models, HTTP clients)."""


class RemoteProvider(EmbeddingProvider):
    """A provider behind an HTTP API: model and dimension defaults, a client.

    Subclasses set ``default_model`` and ``default_dims`` and implement ``_connect``
    (import the SDK, build the client; MissingCredentials if the SDK is missing)."""

    default_model = ""
    default_dims: dict[str, int] = {}  # read-only table of model -> dimensions
    fallback_dims = 1024

    def __init__(
        self,
        api_key: str,
        *,
        model: str = "",
        dims: int = 0,
        base_url: str = "",
        timeout: float = 60.0,
    ) -> None:
        model = model or self.default_model
        self._dims_param = dims or None  # only sent when the user asked for it
        super().__init__(
            model=model,
            dims=dims or self.default_dims.get(model, self.fallback_dims),
            endpoint=base_url,
        )
        self._connect(api_key, base_url, timeout)

    @abstractmethod
    def _connect(self, api_key: str, base_url: str, timeout: float) -> None:
        """Build the SDK client."""
