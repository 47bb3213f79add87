"""Rerankers: a second opinion on a query's best fused candidates, one relevance score
in 0..1 per (query, document) pair.

* ``voyage``: Voyage AI's ``POST /v1/rerank`` (``{query, documents, model,
  truncation}`` -> ``{data: [{index, relevance_score}]}``);
* ``http``: the Jina / Cohere shape of ``POST <baseUrl>/rerank`` (``{model, query,
  documents, top_n}`` -> ``{results: [{index, relevance_score}]}``), which
  self-hosted servers speak too: llama.cpp's ``llama-server --reranking`` and
  Hugging Face TEI (whose plain list of ``{index, score}`` is read as well);
* ``local``: a GGUF cross-encoder through llama-cpp-python with rank pooling (the
  model's classification head scores ``[CLS] query [SEP] document [SEP]``).

Scores a server gives outside 0..1 (raw logits: TEI with ``raw_scores``, llama.cpp)
go through the logistic function. Errors are the embedding providers' classes
(``errors.py``): 429 is ``RateLimited`` with its Retry-After, 5xx ``TransientError``,
anything unreadable ``PermanentError``. Standard library HTTP only: the rerank stage
needs no SDK.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import threading
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .errors import (
    MissingCredentials,
    PermanentError,
    ProviderTimeout,
    TransientError,
    http_status_error,
    install_hint,
    package_fix,
)

__all__ = ["HttpReranker", "LocalReranker", "Reranker", "make_reranker"]

VOYAGE_URL = "https://api.voyageai.com/v1"
VOYAGE_MODEL = "rerank-2.5"


class Reranker:
    """Scores documents against a query. ``key`` names the model and endpoint: rerank
    scores are cached under it."""

    id = "none"

    def __init__(self, model: str, endpoint: str) -> None:
        self.model = model
        self.endpoint = endpoint

    def key(self) -> str:
        return f"{self.id}:{self.model}:{self.endpoint}"

    def score(self, query: str, documents: Sequence[str]) -> list[float]:
        raise NotImplementedError

    def close(self) -> None:
        """Release what the reranker holds (a model in memory)."""


def _unit(values: Sequence[float]) -> list[float]:
    """Scores as given when all lie in 0..1, else all through the logistic function."""
    if all(0.0 <= v <= 1.0 for v in values):
        return [float(v) for v in values]
    return [1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, v)))) for v in values]


class HttpReranker(Reranker):
    """Voyage's or the Jina/Cohere wire format over HTTP (``dialect`` ``voyage`` or
    ``http``)."""

    def __init__(
        self, dialect: str, model: str, base_url: str, api_key: str, timeout: float
    ) -> None:
        if dialect not in ("voyage", "http"):
            raise PermanentError(f"unknown rerank dialect {dialect!r}")
        if dialect == "voyage" and not api_key:
            raise MissingCredentials("no Voyage API key (VOYAGE_API_KEY or rerank.apiKey)")
        base = (base_url or (VOYAGE_URL if dialect == "voyage" else "")).rstrip("/")
        if not base.startswith(("http://", "https://")):
            raise PermanentError(f"rerank.baseUrl must be an http(s) URL, not {base_url!r}")
        super().__init__(model or (VOYAGE_MODEL if dialect == "voyage" else ""), base)
        self.id = dialect
        self._key = api_key
        self._timeout = timeout

    def _body(self, query: str, documents: Sequence[str]) -> dict[str, Any]:
        if self.id == "voyage":
            return {
                "query": query,
                "documents": list(documents),
                "model": self.model,
                "truncation": True,
            }
        body: dict[str, Any] = {
            "query": query,
            "documents": list(documents),
            "top_n": len(documents),
            "return_documents": False,
        }
        if self.model:
            body["model"] = self.model
        return body

    def score(self, query: str, documents: Sequence[str]) -> list[float]:
        if not documents:
            return []
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        req = urllib.request.Request(
            f"{self.endpoint}/rerank",
            data=json.dumps(self._body(query, documents)).encode(),
            headers=headers,
            method="POST",
        )
        try:
            with urllib.request.urlopen(req, timeout=self._timeout) as resp:
                raw = resp.read(64 << 20)
        except urllib.error.HTTPError as exc:
            detail = exc.read(300).decode("utf-8", "replace") if exc.fp else ""
            raise http_status_error(exc.code, exc.headers, detail, "rerank ") from exc
        except TimeoutError as exc:
            raise ProviderTimeout(f"rerank timed out after {self._timeout:g}s") from exc
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, TimeoutError):
                raise ProviderTimeout(f"rerank timed out after {self._timeout:g}s") from exc
            raise TransientError(f"rerank connection failed: {exc.reason}") from exc
        except OSError as exc:
            raise TransientError(f"rerank connection failed: {exc}") from exc
        return _parse(raw, len(documents))


def _parse(raw: bytes, n: int) -> list[float]:
    """One score per document from any of the accepted response shapes."""
    try:
        data = json.loads(raw)
        items = data if isinstance(data, list) else data.get("data") or data.get("results")
        if not isinstance(items, list):
            raise TypeError("no 'data' or 'results' list")
        scores: dict[int, float] = {}
        for item in items:
            index = item["index"]
            value = item["relevance_score"] if "relevance_score" in item else item["score"]
            if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < n:
                raise ValueError(f"index {index!r} out of range")
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise TypeError(f"score {value!r} is not a number")
            if not math.isfinite(value):
                raise ValueError(f"score {value!r} is not finite")
            scores[index] = float(value)
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise PermanentError(f"unreadable rerank response: {exc}") from exc
    if len(scores) != n:
        raise PermanentError(f"rerank response scored {len(scores)} of {n} documents")
    return _unit([scores[i] for i in range(n)])


class LocalReranker(Reranker):
    """A GGUF cross-encoder (a BERT- or Qwen-style reranker with a classification
    head) run by llama-cpp-python with rank pooling: each (query, document) pair is
    one sequence, and the sequence's pooled output is its relevance."""

    id = "local"

    def __init__(self, model_path: Path, *, threads: int = 0, n_ctx: int = 512) -> None:
        try:
            import llama_cpp
        except ImportError as exc:
            raise MissingCredentials(
                "llama-cpp-python is not installed: " + install_hint("local"),
                fix=package_fix("local"),
            ) from exc
        self._lib: Any = llama_cpp
        try:
            self._llm: Any = llama_cpp.Llama(
                model_path=str(model_path),
                embedding=True,
                pooling_type=llama_cpp.LLAMA_POOLING_TYPE_RANK,
                n_ctx=n_ctx,
                n_batch=n_ctx,
                n_ubatch=n_ctx,
                n_threads=threads or os.cpu_count() or 1,
                verbose=False,
            )
        except (ValueError, RuntimeError, OSError) as exc:
            raise PermanentError(f"cannot load rerank model {model_path}: {exc}") from exc
        meta = getattr(self._llm, "metadata", {}) or {}
        arch = meta.get("general.architecture", "")
        if str(meta.get(f"{arch}.pooling_type")) != str(llama_cpp.LLAMA_POOLING_TYPE_RANK):
            self._llm.close()
            raise PermanentError(
                f"{model_path.name} is not a reranker: its GGUF does not declare rank pooling"
            )
        super().__init__(model_path.name, f"gguf:{model_path.stat().st_size}")
        self._n_ctx = n_ctx
        self._lock = threading.Lock()  # a llama.cpp context is not thread-safe

    def _pair(self, query: str, document: str) -> list[int]:
        """``[CLS] query [SEP] document [SEP]`` (the tokenizer's own special tokens),
        the document cut to fit the context."""
        llm = self._llm
        q: list[int] = list(llm.tokenize(query.encode("utf-8", "replace"), add_bos=True))
        d: list[int] = list(llm.tokenize(document.encode("utf-8", "replace"), add_bos=False))
        eos = int(llm.token_eos())
        sep = [eos] if eos >= 0 else []
        head = q if q and q[-1] == eos else q + sep  # tokenize may end the query with it
        room = max(0, self._n_ctx - len(head) - len(sep))
        return (head + d[:room] + sep)[: self._n_ctx]

    def score(self, query: str, documents: Sequence[str]) -> list[float]:
        lib = self._lib
        out: list[float] = []
        try:
            with self._lock:
                ctx = self._llm.ctx
                batch = lib.llama_batch_init(self._n_ctx, 0, 1)
                try:
                    for doc in documents:
                        tokens = self._pair(query, doc)
                        for i, tok in enumerate(tokens):
                            batch.token[i] = tok
                            batch.pos[i] = i
                            batch.n_seq_id[i] = 1
                            batch.seq_id[i][0] = 0
                            batch.logits[i] = True  # every token is an output: no warning
                        batch.n_tokens = len(tokens)
                        memory = lib.llama_get_memory(ctx)
                        if memory:  # a decoder's cache must not carry the previous pair
                            lib.llama_memory_clear(memory, True)
                        if lib.llama_decode(ctx, batch) != 0:
                            raise RuntimeError("llama_decode failed")
                        ptr = lib.llama_get_embeddings_seq(ctx, 0)
                        if not ptr:
                            raise RuntimeError("no rank output (is this a reranker model?)")
                        out.append(float(ptr[0]))
                finally:
                    lib.llama_batch_free(batch)
        except (ValueError, RuntimeError, OSError) as exc:
            raise PermanentError(f"local rerank failed: {exc}") from exc
        return _unit(out)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._llm.close()


def make_reranker(
    provider: str,
    *,
    model: str = "",
    base_url: str = "",
    api_key: str = "",
    timeout: float = 3.0,
    model_cache_dir: Path | None = None,
) -> Reranker:
    """The reranker ``provider`` names (``voyage``, ``http``, ``local``). The API key
    falls back to ``MEMINDEX_RERANK_API_KEY``, then (Voyage) ``VOYAGE_API_KEY``. A
    local ``model`` is a file or an ``hf:`` URI, resolved as the embedding model's is
    (``local_gguf.resolve_model``, into ``model_cache_dir``)."""
    key = api_key or os.environ.get("MEMINDEX_RERANK_API_KEY", "")
    if provider == "voyage":
        key = key or os.environ.get("VOYAGE_API_KEY", "")
        return HttpReranker("voyage", model, base_url, key, timeout)
    if provider == "http":
        return HttpReranker("http", model, base_url, key, timeout)
    if provider == "local":
        from .auto import ProviderSpec
        from .local_gguf import resolve_model

        cache = model_cache_dir or ProviderSpec().model_cache_dir
        return LocalReranker(resolve_model(model, cache, timeout=max(timeout, 60.0)))
    raise PermanentError(f"unknown rerank provider {provider!r}")
