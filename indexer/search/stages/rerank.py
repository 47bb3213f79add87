"""``rerank`` (``[rerank]``, off unless a provider is set): the best
``rerank.candidates`` candidates are scored by a reranker (``providers/rerank.py``)
and re-ordered by a blend of the two scores, before the results are cut to
``maxResults`` (reranking only the final few could not bring anything new in). A
blended score is the blend times the best candidate's score before it (the scores
stay on the pipeline's scale); the candidates below the pool keep their order
below it.

Blends, with ``f`` the fused score over the pool's best and ``r`` the reranker's 0..1:

* ``rank`` (default): the fused order is trusted more at the top, as QMD does:
  ``w f + (1 - w) r`` with ``w`` 0.75 for the first three places, 0.6 to the tenth,
  0.4 below;
* ``fixed``: ``(1 - weight) f + weight r``.

The reranker runs on a pool thread under ``rerank.timeoutMs``; a failure or a timeout
leaves the fused order and says why (``fallback``). Scores are kept per process by
(reranker key, query hash, chunk text hash), so a repeated query is not sent again;
a call that finishes after its search gave up still fills the cache.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import Executor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from indexer.config import RerankConfig
from indexer.search.candidates import Candidate, ChunkRows
from indexer.search.stages.base import Stage, pool
from indexer.selection import provider_spec
from providers.errors import ProviderError

if TYPE_CHECKING:
    from indexer.search.stages.context import RunContext
    from providers.rerank import Reranker

__all__ = ["CACHE", "Rerank", "RerankOutcome", "rerank", "reranker_for"]

_RETRY_BUILD_S = 60.0  # a reranker that could not be built is tried again after this


def _weight(pos: int) -> float:
    """The fused score's share at fused position ``pos`` (0-based), rank blend."""
    return 0.75 if pos < 3 else 0.6 if pos < 10 else 0.4


class _Cache:
    """Rerank scores by (reranker, query, chunk text), least recently used dropped."""

    def __init__(self) -> None:
        self._data: OrderedDict[tuple[str, bytes, bytes], float] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, keys: Sequence[tuple[str, bytes, bytes]]) -> list[float | None]:
        with self._lock:
            out: list[float | None] = []
            for k in keys:
                v = self._data.get(k)
                if v is not None:
                    self._data.move_to_end(k)
                out.append(v)
            return out

    def put(self, items: Sequence[tuple[tuple[str, bytes, bytes], float]], limit: int) -> None:
        with self._lock:
            for k, v in items:
                self._data[k] = v
                self._data.move_to_end(k)
            while len(self._data) > limit:
                self._data.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._data)


CACHE = _Cache()
_BUILT: dict[tuple[RerankConfig, Path], tuple[float, Reranker | None, str]] = {}
_BUILD_LOCK = threading.Lock()


def reranker_for(cfg: RerankConfig, model_cache_dir: Path) -> tuple[Reranker | None, str]:
    """The process's reranker for ``cfg`` (built on first use), or None and why.
    ``model_cache_dir``: where an ``hf:`` model is kept (the embedding models' folder)."""
    with _BUILD_LOCK:
        got = _BUILT.get((cfg, model_cache_dir))
        if got is not None and (got[1] is not None or time.monotonic() - got[0] < _RETRY_BUILD_S):
            return got[1], got[2]
        from providers.rerank import make_reranker

        try:
            r: Reranker | None = make_reranker(
                cfg.provider,
                model=cfg.model,
                base_url=cfg.baseUrl,
                api_key=cfg.apiKey,
                timeout=cfg.timeoutMs / 1000,
                model_cache_dir=model_cache_dir,
            )
            why = ""
        except ProviderError as exc:
            r, why = None, exc.message
        _BUILT[(cfg, model_cache_dir)] = (time.monotonic(), r, why)
        return r, why


def _hash(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


@dataclass(frozen=True)
class RerankOutcome:
    hits: list[Candidate]
    fallback: str | None  # why the fused order stands, else None
    info: dict[str, object]  # for explain: provider, model, blend, pool, cached, ms


def rerank(
    cfg: RerankConfig,
    query: str,
    hits: Sequence[Candidate],
    rows: ChunkRows,
    pool: Executor,
    model_cache_dir: Path,
) -> RerankOutcome:
    """``hits`` (best first) with the best ``cfg.candidates`` re-ordered by the blend."""
    t0 = time.monotonic()
    reranker, why = reranker_for(cfg, model_cache_dir)
    info: dict[str, object] = {"provider": cfg.provider, "blend": cfg.blend}
    if reranker is None:
        return RerankOutcome(list(hits), f"reranker unavailable ({why}): fused order", info)
    info["model"] = reranker.model
    head = list(hits[: cfg.candidates])
    rows.need([h.id for h in head])
    head = [h for h in head if rows.get(h.id) is not None]
    if not head:
        return RerankOutcome(list(hits), None, info)
    texts = [rows.get(h.id).text[: cfg.maxChars] for h in head]  # type: ignore[union-attr]
    qhash = _hash(query)
    keys = [(reranker.key(), qhash, _hash(t)) for t in texts]
    known = CACHE.get(keys)
    todo = [i for i, v in enumerate(known) if v is None]
    info["pool"] = len(head)
    info["cached"] = len(head) - len(todo)
    if todo:

        def call() -> list[float]:
            from providers.retry import RetryPolicy, call_with_retries

            got = call_with_retries(
                lambda: reranker.score(query, [texts[i] for i in todo]),
                RetryPolicy(attempts=2, initial=0.2, maximum=1.0, max_retry_after=1.0),
            )
            CACHE.put([(keys[i], s) for i, s in zip(todo, got, strict=True)], cfg.cacheEntries)
            return got

        limit_s = cfg.timeoutMs / 1000
        job = pool.submit(call)
        try:
            got = job.result(timeout=limit_s)
        except FutureTimeout:
            info["ms"] = round(1000 * (time.monotonic() - t0), 1)
            return RerankOutcome(
                list(hits), f"reranker took longer than {limit_s:g}s: fused order", info
            )
        except ProviderError as exc:
            info["ms"] = round(1000 * (time.monotonic() - t0), 1)
            return RerankOutcome(list(hits), f"rerank failed ({exc.message}): fused order", info)
        for i, s in zip(todo, got, strict=True):
            known[i] = s
    ranked = _blend(cfg, head, known, hits)
    info["ms"] = round(1000 * (time.monotonic() - t0), 1)
    return RerankOutcome(ranked, None, info)


def _blend(
    cfg: RerankConfig,
    head: list[Candidate],
    scores: Sequence[float | None],
    hits: Sequence[Candidate],
) -> list[Candidate]:
    """``head`` re-ordered by the blend of its scores and the reranker's ``scores``,
    then the rest of ``hits`` in their order, below the pool."""
    top = max((h.score for h in head), default=0.0) or 1.0
    blended = []
    for pos, (h, r) in enumerate(zip(head, scores, strict=True)):
        assert r is not None
        f = max(0.0, h.score) / top
        w = _weight(pos) if cfg.blend == "rank" else 1.0 - cfg.weight
        part = {"rerank": round(r, 4), "before": round(h.score, 4)}
        blended.append(h.with_part("rerank", part, score=top * (w * f + (1.0 - w) * r)))
    order = {id(h): n for n, h in enumerate(blended)}
    blended.sort(key=lambda h: (-h.score, order[id(h)]))
    kept = {h.id for h in head}
    # The rest keep their order, below the pool.
    rest = [h for h in hits if h.id not in kept]
    floor = min(h.score for h in blended) * 0.999
    first = max((h.score for h in rest), default=0.0) or 1.0
    rest = [replace(h, score=floor * max(0.0, h.score) / first) for h in rest]
    return blended + rest


class Rerank(Stage):
    name = "rerank"

    def applies(self, ctx: RunContext) -> bool:
        return not ctx.listing and bool(ctx.cfg.rerank.provider)

    def __call__(self, ctx: RunContext, hits: list[Candidate]) -> list[Candidate]:
        if not hits:
            return hits
        cache_dir = provider_spec(ctx.cfg).model_cache_dir
        done = rerank(ctx.cfg.rerank, ctx.req.query, hits, ctx.rows, pool(), cache_dir)
        ctx.notes.rerank = done.info
        if done.fallback:
            ctx.notes.fallback = done.fallback
        return done.hits
