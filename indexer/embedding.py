"""Embedding chunks that have no vector yet: cache first, provider for the rest.

Every vector is cached by (provider key, chunk hash), so unchanged text is never
embedded twice: after an edit only the changed chunks reach the provider, and a
rebuild or a switch back to a model used before is served from the cache.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np

from providers.base import EmbeddingProvider
from providers.errors import ProviderError
from providers.retry import call_with_retries

from .store import Store

__all__ = ["EmbedReport", "embed_pending"]

log = logging.getLogger(__name__)

_STEP = 256  # chunks per transaction


@dataclass
class EmbedReport:
    embedded: int = 0  # vectors the provider computed
    cacheHits: int = 0
    pending: int = 0  # chunks still without a vector
    error: str | None = None
    seconds: float = 0.0


def embed_pending(
    store: Store,
    provider: EmbeddingProvider,
    *,
    max_cache_entries: int = 50_000,
    should_stop: Callable[[], bool] | None = None,
) -> EmbedReport:
    """Give every pending chunk a vector. A provider failure stops the pass (the
    chunks stay pending, keyword search is unaffected) and is reported."""
    t0 = time.monotonic()
    rep = EmbedReport()
    key = provider.key()
    if store.meta_get("vectorKey") != key or store.vector_dims() not in (None, provider.dims):
        # Another provider's or model's vectors: every chunk is pending again; the
        # cache still holds what this provider embedded before.
        with store.transaction():
            store.drop_vectors()
            store.meta_set("vectorKey", key)
            store.meta_set("vectorModel", f"{provider.id}:{provider.model}:{provider.dims}")
    with store.transaction():
        store.ensure_vector_table(provider.dims)
    while not (should_stop and should_stop()):
        batch = store.pending_chunks(_STEP)
        if not batch:
            break
        hashes = [h for _, h, _ in batch]
        cached = store.cache_get(key, hashes)
        missing = [(i, h, t) for i, h, t in batch if h not in cached]
        fresh: dict[str, bytes] = {}
        if missing:
            texts = list(dict.fromkeys(t for _, _, t in missing))  # same text once
            try:
                vecs = call_with_retries(partial(provider.embed_all, texts))
            except ProviderError as exc:
                rep.error = f"{provider.id}: {exc.message}"
                log.warning("embedding stopped: %s", rep.error)
                break
            if vecs.shape != (len(texts), provider.dims) or not np.isfinite(vecs).all():
                rep.error = f"{provider.id}: returned vectors of shape {vecs.shape}"
                break
            by_text = {t: vecs[n].astype("<f4").tobytes() for n, t in enumerate(texts)}
            for _, h, t in missing:
                fresh[h] = by_text[t]
        with store.transaction():
            if fresh:
                store.cache_put(key, provider.dims, fresh.items())
            store.put_vectors((i, cached.get(h) or fresh[h]) for i, h, _ in batch)
        rep.embedded += len(fresh)
        rep.cacheHits += len(batch) - len(missing)
    with store.transaction():
        store.cache_prune(max_cache_entries)
    rep.pending = store.pending_count()
    rep.seconds = round(time.monotonic() - t0, 3)
    return rep
