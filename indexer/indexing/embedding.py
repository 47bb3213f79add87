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

from indexer.indexing.progress import WorkProgress
from indexer.store import IndexStore
from providers.backoff import Backoff
from providers.base import EmbeddingProvider
from providers.batch import BatchState
from providers.calibration import META_KEY, Scale, measure
from providers.errors import ProviderError
from providers.retry import RetryPolicy, call_with_retries

__all__ = ["EmbedReport", "embed_pending"]

log = logging.getLogger(__name__)

# Chunks per transaction: starts small and doubles while a step takes under a
# second, so a slow local model commits every second or so (a kill loses little)
# and a fast remote one still writes 256 at a time.
_STEP_MIN, _STEP_MAX = 16, 256


@dataclass
class EmbedReport:
    """What a pass of embedding did."""

    embedded: int = 0  # vectors the provider computed
    cacheHits: int = 0
    pending: int = 0  # chunks still without a vector
    batchSubmitted: int = 0  # batch jobs created in this pass
    batchCollected: int = 0  # batch jobs finished and collected in this pass
    batchJobs: int = 0  # jobs still open after this pass
    error: str | None = None
    seconds: float = 0.0


@dataclass
class _Pass:
    """What one pass embeds with and reports to."""

    store: IndexStore
    provider: EmbeddingProvider
    key: str  # the provider's (``provider.key()``): what the cache and jobs are keyed by
    rep: EmbedReport
    should_stop: Callable[[], bool] | None

    def stopped(self) -> bool:
        """Whether the caller asked the pass to stop."""
        return bool(self.should_stop and self.should_stop())


def embed_pending(
    store: IndexStore,
    provider: EmbeddingProvider,
    *,
    max_cache_entries: int = 50_000,
    should_stop: Callable[[], bool] | None = None,
    use_batch: bool = False,
    wait: bool = True,
    batch_timeout: float = 3600.0,
    sleep: Callable[[float], None] = time.sleep,
    progress: WorkProgress | None = None,
) -> EmbedReport:
    """Give every pending chunk a vector (``progress`` counts them). A provider
    failure stops the pass (the chunks stay pending, keyword search is unaffected)
    and is reported.

    With ``use_batch`` (and a provider that has batch jobs) chunks not in the cache
    go into as few batch jobs as the provider allows, across all files; job ids are
    stored, collected on this or a later pass (``wait``: poll with backoff up to
    ``batch_timeout``), and a failed job's chunks are embedded directly."""
    t0 = time.monotonic()
    rep = EmbedReport()
    key = provider.key()
    _prepare_vectors(store, provider, key)
    run = _Pass(store, provider, key, rep, should_stop)
    in_jobs: set[str] = set()
    if use_batch and provider.supports_batch_jobs:
        try:
            in_jobs = _run_batches(run, wait, batch_timeout, sleep)
        except ProviderError as exc:
            rep.error = f"{provider.id} batch: {exc.message}"
            log.warning("batch embedding stopped: %s", rep.error)
            in_jobs = {h for hs in store.batch_jobs(key).values() for h in hs}
    _embed_direct(run, in_jobs, progress)
    with store.transaction():
        store.cache_prune(max_cache_entries)
    if rep.error is None and not run.stopped() and store.any_embedded():
        _keep_scale(store, provider, key)
    rep.pending = store.pending_count()
    if progress is not None and rep.pending == 0:
        progress.finished()
    rep.batchJobs = len(store.batch_jobs(key))
    rep.seconds = round(time.monotonic() - t0, 3)
    return rep


def _prepare_vectors(store: IndexStore, provider: EmbeddingProvider, key: str) -> None:
    """Make the store's vector table this provider's, dropping another's vectors."""
    if store.meta_get("vectorKey") != key or store.vector_dims() not in (None, provider.dims):
        # Another provider's or model's vectors: every chunk is pending again; the
        # cache still holds what this provider embedded before.
        with store.transaction():
            store.drop_vectors()
            store.meta_set("vectorKey", key)
            store.meta_set("vectorModel", f"{provider.id}:{provider.model}:{provider.dims}")
    with store.transaction():
        store.ensure_vector_table(provider.dims)


def _embed_direct(run: _Pass, in_jobs: set[str], progress: WorkProgress | None) -> None:
    """Give the pending chunks not waiting in batch jobs a vector, from the cache or
    the provider, in steps of ``_STEP_MIN`` to ``_STEP_MAX`` chunks; a provider
    failure ends it (``rep.error``)."""
    store, provider, key, rep = run.store, run.provider, run.key, run.rep
    after = 0
    step = _STEP_MIN
    while not run.stopped():
        t_step = time.monotonic()
        batch = store.pending_chunks(step, after)
        if not batch:
            break
        if progress is not None and not after:  # a count only when there is work
            progress.embedding(store.pending_count())
        after = batch[-1][0]
        hashes = [h for _, h, _ in batch]
        cached = store.cache_get(key, hashes)
        batch = [(i, h, t) for i, h, t in batch if h in cached or h not in in_jobs]
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
        if progress is not None:
            progress.embedded(len(batch))
        fast = time.monotonic() - t_step < 1.0
        step = min(_STEP_MAX, step * 2) if fast else max(_STEP_MIN, step // 2)


_POLLS = Backoff(initial=1.0, maximum=60.0)  # a batch job polled: 1 s, 2 s, 4 s …
_SCALE_RETRIES = RetryPolicy(attempts=2, initial=0.5, maximum=2.0)  # tried again next pass


def _keep_scale(store: IndexStore, provider: EmbeddingProvider, key: str) -> None:
    """Store the model's similarity scale once per model, so a search reports its
    cosines on the one scale (``providers.calibration``). A failure leaves the
    cosines as they are until the next pass tries again."""
    if Scale.from_meta(store.meta_get(META_KEY), key) is not None:
        return
    try:
        scale = call_with_retries(partial(measure, provider), _SCALE_RETRIES)
    except Exception as exc:  # optional: never stops indexing
        log.warning("could not measure %s's similarity scale: %s", provider.id, exc)
        return
    with store.transaction():
        store.meta_set(META_KEY, scale.to_meta(key))


def _run_batches(
    run: _Pass, wait: bool, timeout: float, sleep: Callable[[float], None]
) -> set[str]:
    """Submit jobs for uncached pending chunks, collect finished jobs; return the
    hashes still waiting in open jobs."""
    store, provider, key, rep = run.store, run.provider, run.key, run.rep
    jobs = store.batch_jobs(key)
    waiting = {h for hs in jobs.values() for h in hs}
    todo: dict[str, str] = {}
    after = 0
    while True:
        part = store.pending_chunks(1000, after)
        if not part:
            break
        after = part[-1][0]
        hashes = [h for _, h, _ in part if h not in waiting]
        cached = store.cache_get(key, hashes)
        todo.update((h, t) for _, h, t in part if h not in waiting and h not in cached)
    items = list(todo.items())
    size = provider.max_batch_job_requests
    for start in range(0, len(items), size):
        chunk = items[start : start + size]
        job_id = call_with_retries(partial(provider.submit_batch, chunk))
        with store.transaction():
            store.save_batch_job(job_id, key, [h for h, _ in chunk])
        jobs[job_id] = [h for h, _ in chunk]
        rep.batchSubmitted += 1
        log.info("submitted batch job %s (%d chunks)", job_id, len(chunk))
    polls = _POLLS.waits()
    deadline = time.monotonic() + timeout
    while jobs:
        for job_id in list(jobs):
            state = call_with_retries(partial(provider.poll_batch, job_id))
            if state.state == "running":
                continue
            _collect(run, job_id, jobs.pop(job_id), state)
        if not jobs or not wait or time.monotonic() > deadline or run.stopped():
            break
        sleep(polls.next())
    return {h for hs in jobs.values() for h in hs}


def _collect(run: _Pass, job_id: str, hashes: list[str], state: BatchState) -> None:
    """Cache a finished job's vectors, embedding directly the chunks it has none for
    (all of them when it failed), and forget the job."""
    store, provider, key, rep = run.store, run.provider, run.key, run.rep
    if state.ordered is not None:  # results in submission order, no ids
        state.vectors.update(
            (h, v) for h, v in zip(hashes, state.ordered, strict=False) if v is not None
        )
    wanted = set(hashes)
    vectors = {
        h: v.astype("<f4").tobytes()
        for h, v in state.vectors.items()
        if h in wanted and v.shape == (provider.dims,)
    }
    redo = [h for h in hashes if h not in vectors]
    if state.state == "failed":
        log.warning(
            "batch job %s %s: embedding its chunks directly",
            job_id,
            state.reason or "failed",
        )
    if redo:
        texts = store.texts_for_hashes(redo)
        direct = [h for h in redo if h in texts]
        if direct:
            vecs = call_with_retries(partial(provider.embed_all, [texts[h] for h in direct]))
            vectors.update((h, vecs[n].astype("<f4").tobytes()) for n, h in enumerate(direct))
            rep.embedded += len(direct)
    with store.transaction():
        store.cache_put(key, provider.dims, vectors.items())
        store.delete_batch_job(job_id)
    rep.batchCollected += 1
