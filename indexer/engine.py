"""One agent's memory index: the operations the CLI and the socket server expose.

``MemoryIndex`` holds the config and the open store and implements memory_search,
memory_get, status and reindex with the result shapes of the socket protocol.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import TYPE_CHECKING, Any

import apsw

from providers.auto import ProviderSpec, Selection, select
from providers.errors import ProviderError, ProviderTimeout

from . import __version__, safefs
from .chunking import split_lines
from .config import Config
from .discovery import resolve_get_path
from .errors import (
    FileUnreadable,
    FileVanished,
    IndexMismatch,
    InvalidParams,
    MemindexError,
    NotFound,
    PathRefused,
)
from .gating import skip_reason
from .generations import (
    abandoned,
    cleanup,
    new_generation,
    publish,
    rebuild_lock,
    remove_generation,
)
from .pipeline import (
    Progress,
    SyncReport,
    read_text,
    rebuild_reason,
    sync,
)
from .ranking import apply_decay, balance_sources, mmr
from .search import ParsedQuery, SearchHit, fuse, keyword_search, parse_query, render_results
from .session_sync import SessionReport, sync_sessions
from .sessions import SESSIONS_SOURCE, is_transcript_name, read_lines, redact
from .store import SearchRow, Store

if TYPE_CHECKING:  # numpy, the providers' base and tenacity load when first used
    import numpy as np
    import numpy.typing as npt

    from providers.base import EmbeddingProvider

    from .keywords import KeywordIndex
    from .vectors import VectorMatrix

__all__ = [
    "MemoryIndex",
    "SOURCES",
    "provider_note",
    "provider_spec",
    "read_document",
    "select_provider",
]

SOURCES = ("memory", "sessions")


def _int_param(value: Any, name: str, minimum: int, default: int | None) -> int | None:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidParams(f"'{name}' must be an integer")
    if value < minimum:
        raise InvalidParams(f"'{name}' must be >= {minimum}")
    return value


_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    """Query embeddings with a deadline run here; sized for many concurrent socket
    clients (the threads mostly wait in a provider). Made on first use."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=64, thread_name_prefix="memindex-search")
        return _POOL


log = logging.getLogger(__name__)


class _Abandon(Exception):
    """A rebuild stopped before it finished: the new generation is discarded."""


def provider_spec(cfg: Config) -> ProviderSpec:
    p = cfg.provider
    cache = Path(p.local.modelCacheDir) if p.local.modelCacheDir else None
    return ProviderSpec(
        name=p.name,
        fallback=p.fallback,
        model=p.model,
        dims=p.dims,
        local_model=p.local.modelPath,
        model_cache_dir=cache or ProviderSpec().model_cache_dir,
        threads=p.local.threads,
        base_url=p.remote.baseUrl,
        api_key=p.remote.apiKey,
        timeout_s=p.remote.timeoutMs / 1000,
    )


def select_provider(cfg: Config) -> Selection:
    """The embedding provider this config asks for, or None with the reasons."""
    return select(provider_spec(cfg))


def provider_note(cfg: Config, sel: Selection) -> str:
    """What search and status say about the provider. With ``auto`` and nothing set
    up, the short "no embedding provider configured" (``memindex doctor`` lists what
    was tried); a provider that was asked for by name says why it is missing."""
    if sel.provider is None and cfg.provider.name == "auto":
        return NO_PROVIDER
    return sel.reason


NO_PROVIDER = "no embedding provider configured"


@contextlib.contextmanager
def _reading(display: str) -> Iterator[None]:
    """Errors of reading a file the caller named carry its display path."""
    try:
        yield
    except FileVanished as exc:
        raise NotFound(f"{display}: no such file") from exc
    except FileUnreadable as exc:
        raise PathRefused(f"{display}: {exc.reason}") from exc


def read_document(cfg: Config, raw: str) -> tuple[str, str]:
    """(display path, text) of the memory file ``raw`` under memory_get's rules
    (``resolve_get_path``, then a read through ``safefs``)."""
    target = resolve_get_path(cfg, raw)
    with _reading(target.display):
        text, _ = read_text(target.root, target.parts, cfg.limits.maxFileBytes, exact=True)
    return target.display, text


def _lines_result(
    path: str, picked: list[str], first: int, total: int, truncated: bool
) -> dict[str, Any]:
    """The memory_get result: ``picked`` are lines ``first``.. of a ``total``-line file.
    ``truncated``: the byte limit stopped it early; ``nextFrom`` says where to go on."""
    out: dict[str, Any] = {
        "path": path,
        "text": "\n".join(picked),
        "from": first,
        "lines": len(picked),
        "totalLines": total,
        "truncated": truncated,
    }
    if truncated:
        out["nextFrom"] = first + len(picked)
    return out


def _slice(path: str, text: str, first: int, count: int | None, max_bytes: int) -> dict[str, Any]:
    """Lines ``first`` .. ``first + count - 1`` of ``text``, at most ``max_bytes``."""
    all_lines = split_lines(text)
    end = len(all_lines) if count is None else min(len(all_lines), first - 1 + count)
    picked: list[str] = []
    size = 0
    for line in all_lines[first - 1 : end]:
        n = len(line.encode("utf-8")) + 1
        if picked and size + n > max_bytes:
            return _lines_result(path, picked, first, len(all_lines), True)
        picked.append(line)
        size += n
    return _lines_result(path, picked, first, len(all_lines), False)


class MemoryIndex:
    def __init__(
        self,
        cfg: Config,
        *,
        readonly: bool = False,
        provider: EmbeddingProvider | None = None,
        provider_note: str = "",
        vectors: VectorMatrix | None = None,
        store: Store | None = None,
        keywords: KeywordIndex | None = None,
    ) -> None:
        self.cfg = cfg
        self.index_path: Path = cfg.resolved_index_path()
        self.store = store or Store(self.index_path, readonly=readonly)
        self.provider = provider
        self.provider_note = provider_note or NO_PROVIDER
        self.vectors = vectors
        self.keywords = keywords
        self._sources_seen: tuple[str | None, bool] | None = None
        self._workspace_ok: tuple[Path, str | None] | None = None
        # Read at the start of search(): chunksVersion, vectorsVersion, vectorKey.
        self._version: str | None = None
        self._versions: tuple[str | None, str | None, str | None] = (None, None, None)
        self._ready_seen: tuple[object, bool] | None = None

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> MemoryIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- operations ------------------------------------------------------------

    def sync(
        self,
        *,
        force: bool = False,
        progress: Progress | None = None,
        should_stop: Callable[[], bool] | None = None,
        embed: bool = True,
    ) -> SyncReport:
        """Memory files, then every transcript delta (a full backfill), then vectors.

        When the chunking, the embedding model or ``force`` call for a rebuild, it is
        built into a new generation file while this one keeps answering, then
        swapped in atomically."""
        t0 = time.monotonic()
        key = self.provider.key() if self.provider else None
        reason = rebuild_reason(self.store, self.cfg, force=force, provider_key=key)
        if reason is not None:
            with rebuild_lock(self.index_path):  # one rebuild per index at a time
                rebuilt = self._rebuild(reason, progress, should_stop, embed)
            rebuilt.seconds = round(time.monotonic() - t0, 3)  # the whole rebuild
            return rebuilt
        report = sync(self.store, self.cfg, force=force, progress=progress, should_stop=should_stop)
        if not report.stopped:
            report.sessions = sync_sessions(self.store, self.cfg, should_stop=should_stop).to_json()
        if embed and not report.stopped:
            report.embedding = self.embed(should_stop=should_stop)
        report.seconds = round(time.monotonic() - t0, 3)
        return report

    def _rebuild(
        self,
        reason: str,
        progress: Progress | None,
        should_stop: Callable[[], bool] | None,
        embed: bool,
    ) -> SyncReport:
        log.info("rebuilding %s into a new generation: %s", self.index_path, reason)
        # A killed rebuild's generation goes before the new one is made (its vectors
        # and batch jobs kept in the current one, keyed by model), so a kill at any
        # point leaves at most one abandoned generation.
        for old_gen in abandoned(self.index_path):
            with contextlib.suppress(MemindexError, apsw.Error):
                self.store.copy_carryover(old_gen)
            remove_generation(old_gen)
        gen = new_generation(self.index_path)
        fresh = Store(gen)
        try:
            fresh.copy_carryover(self.store.file)
            builder = MemoryIndex(self.cfg, provider=self.provider, store=fresh)
            # Vectors too, whatever the caller asked: a generation is published
            # complete, so searches keep the old one (and its vectors) until then.
            report = builder.sync(
                progress=progress, should_stop=should_stop, embed=embed or self.provider is not None
            )
            if report.stopped:  # interrupted: the current generation stays as it is
                raise _Abandon
            fresh.checkpoint()
        except BaseException as exc:
            fresh.close()
            remove_generation(gen)
            if isinstance(exc, _Abandon):
                return report
            raise
        publish(self.index_path, gen)
        old, self.store = self.store, fresh
        old.close()
        cleanup(self.index_path)
        report.rebuilt = reason
        return report

    def sync_memory(self, *, should_stop: Callable[[], bool] | None = None) -> SyncReport:
        """Memory files only (what the watcher triggers)."""
        return sync(self.store, self.cfg, should_stop=should_stop)

    def embed(
        self, *, should_stop: Callable[[], bool] | None = None, wait: bool = True
    ) -> dict[str, Any] | None:
        """Vectors for chunks that have none (no-op without a provider). With batch
        jobs on, ``wait`` polls them until done (the CLI); the daemon polls later."""
        if self.provider is None:
            return None
        from .embedding import embed_pending

        remote = self.cfg.provider.remote
        rep = embed_pending(
            self.store,
            self.provider,
            max_cache_entries=self.cfg.cache.maxEntries,
            should_stop=should_stop,
            use_batch=remote.batch,
            wait=wait,
            batch_timeout=remote.batchTimeoutMs / 1000,
        )
        return dict(rep.__dict__)

    def _vector_ready(self) -> bool:
        p = self.provider
        if p is None or not self.cfg.hybrid.enabled:
            return False
        # Re-checked when the index file or its chunks, vectors or model change
        # (every write that could change the answer bumps one of them).
        seen = (self.store.file, self._versions)
        if self._ready_seen is None or self._ready_seen[0] != seen:
            ready = (
                self.store.has_vectors()
                and self._versions[2] == p.key()
                and self.store.any_embedded()
            )
            self._ready_seen = (seen, ready)
        return self._ready_seen[1]

    def sync_sessions(
        self, *, due_only: bool, should_stop: Callable[[], bool] | None = None
    ) -> SessionReport:
        return sync_sessions(self.store, self.cfg, due_only=due_only, should_stop=should_stop)

    def search(
        self,
        query: Any,
        *,
        max_results: Any = None,
        min_score: Any = None,
        sources: Any = None,
        gate: Any = None,
    ) -> dict[str, Any]:
        """``gate``: for auto-recall callers, answer small talk, slash commands and
        emoji-only input with no results (``skipped`` says why) instead of searching."""
        if not isinstance(query, str) or not query.strip():
            raise InvalidParams("'query' must be a non-empty string")
        if len(query) > 10_000:
            raise InvalidParams("'query' is longer than 10000 characters")
        if gate is not None and not isinstance(gate, bool):
            raise InvalidParams("'gate' must be true or false")
        if gate and (why := skip_reason(query)) is not None:
            return {
                "results": [],
                "provider": self.provider.id if self.provider else None,
                "model": self.provider.model if self.provider else None,
                "mode": "skipped",
                "fallback": None,
                "skipped": why,
            }
        limit = _int_param(max_results, "maxResults", 1, self.cfg.query.maxResults)
        assert limit is not None
        limit = min(limit, 200)
        if min_score is None:
            floor = self.cfg.query.minScore
        elif isinstance(min_score, (int, float)) and not isinstance(min_score, bool):
            floor = float(min_score)
            if not 0.0 <= floor <= 1.0:
                raise InvalidParams("'minScore' must be between 0 and 1")
        else:
            raise InvalidParams("'minScore' must be a number")
        wanted = self._sources(sources)
        self._versions = self.store.change_versions()
        self._version = self._versions[0]
        self._check_workspace()
        chars = self.cfg.query.maxSnippetChars
        fallback = f"{self.provider_note}: keyword search only"
        if self._vector_ready():
            assert self.provider is not None
            try:
                return self._hybrid(query, limit, floor, wanted, chars)
            except ProviderError as exc:
                fallback = f"query embedding failed ({exc.message}): keyword search only"
        elif self.provider is not None:
            fallback = "vectors are not built yet (run 'memindex index'): keyword search only"
        q, hits = self._keyword(query, limit * 4, floor, self._split_sources(wanted))
        return {
            "results": self._finish(hits, q, limit, chars, wanted),
            "provider": self.provider.id if self.provider else None,
            "model": self.provider.model if self.provider else None,
            "mode": "keyword",
            "fallback": fallback,
        }

    def _split_sources(self, wanted: list[str] | None) -> list[list[str] | None]:
        """Both sources asked for and both present: search each on its own, so the
        larger transcript corpus cannot push memory chunks out of the candidates."""
        if wanted is None and self._both_sources():
            return [["memory"], ["sessions"]]
        return [wanted]

    def _both_sources(self) -> bool:
        """Whether the index holds both sources, re-read when its chunks change."""
        version = self._version
        if self._sources_seen is None or self._sources_seen[0] != version:
            both = self.store.has_source("sessions") and self.store.has_source("memory")
            self._sources_seen = (version, both)
        return self._sources_seen[1]

    def _keyword(
        self,
        query: str,
        pool: int,
        floor: float,
        parts: list[list[str] | None],
        *,
        break_ties: bool = True,
    ) -> tuple[ParsedQuery, list[SearchHit]]:
        """Keyword hits from each part of ``_split_sources`` (at least one)."""
        q = parse_query(query)
        in_memory = None
        if self.keywords is not None and not q.empty():  # every part from one scoring
            in_memory = self.keywords.search_parts(
                self.store, q, pool, parts, version=self._version
            )
        hits: list[SearchHit] = []
        for n, part in enumerate(parts):
            # Rows are read only for the hits that need their text or are shown.
            rows = (
                None
                if in_memory is None
                else [SearchRow.pending(cid, source, rank) for cid, rank, source in in_memory[n]]
            )
            q, found = keyword_search(
                self.store,
                q,
                limit=pool,
                min_score=floor,
                sources=part,
                candidates=pool,
                rows=rows,
                break_ties=break_ties,
            )
            hits.extend(found)
        hits.sort(key=lambda h: -h.score)
        return q, hits

    def _finish(
        self,
        hits: list[SearchHit],
        q: ParsedQuery,
        limit: int,
        chars: int,
        wanted: list[str] | None,
    ) -> list[dict[str, Any]]:
        """Decay, source balance and MMR (as configured), then result objects."""
        qc = self.cfg.query
        if qc.temporalDecay or qc.mmr:  # both read paths or text
            self.store.load_rows(h.row for h in hits)
        if qc.temporalDecay:
            apply_decay(hits, qc.halfLifeDays)
        if wanted is None:
            hits = balance_sources(hits, limit, qc.memoryShare)
        if qc.mmr:
            hits = mmr(hits, limit, qc.mmrLambda)
        return render_results(hits, q, limit, chars, load=self.store.load_rows)

    def _hybrid(
        self, query: str, limit: int, floor: float, wanted: list[str] | None, chars: int
    ) -> dict[str, Any]:
        provider = self.provider
        assert provider is not None
        h = self.cfg.hybrid
        pool = max(limit, limit * h.candidateMultiplier)
        parts = self._split_sources(wanted)
        # The query is embedded on a pool thread (llama.cpp and HTTP release the GIL)
        # while this thread does the keyword half; the vector scan comes after it, so
        # numpy's BLAS threads do not compete with Python for the cores (measured:
        # scanning in parallel with the keyword half was 10-15% slower at 100k).
        from providers.retry import RetryPolicy, call_with_retries

        from .vectors import knn_sqlite

        limit_s = self.cfg.provider.remote.queryTimeoutMs / 1000
        job = _pool().submit(
            call_with_retries,
            lambda: provider.embed_query(query),
            RetryPolicy(attempts=2, initial=0.2, maximum=1.0),
        )
        deadline = time.monotonic() + limit_s
        # Weighted fusion scores each side on its own: the keyword order among equal
        # BM25 scores does not matter to it (rank fusion uses it).
        q, kw = self._keyword(query, pool, 0.0, parts, break_ties=h.fusion == "rrf")
        try:
            qvec: npt.NDArray[np.float32] = job.result(
                timeout=max(0.0, deadline - time.monotonic())
            )[0]
        except FutureTimeout as exc:
            raise ProviderTimeout(f"query embedding took longer than {limit_s:g}s") from exc
        known = {h.row.id for h in kw}  # keyword hits carry their rows already
        found = (  # one pass for all parts; never waits for a reload
            None
            if self.vectors is None
            else self.vectors.fresh_search(self.store, self._versions[1], qvec, pool, parts)
        )
        if found is not None:
            near = [(cid, sim) for cid, sim, _ in found]
            # Read later, for the neighbours that need their text or are shown.
            rows = {
                cid: SearchRow.pending(cid, source) for cid, _, source in found if cid not in known
            }
        else:
            near = [hit for part in parts for hit in knn_sqlite(self.store, qvec, pool, part)]
            rows = self.store.chunk_rows([cid for cid, _ in near if cid not in known])
        fused = fuse(
            q,
            kw,
            sorted(near, key=lambda x: -x[1]),
            rows,
            min_score=floor,
            fusion=h.fusion,
            vector_weight=h.vectorWeight,
            text_weight=h.textWeight,
            rrf_k=h.rrfK,
            load=self.store.load_rows,
        )
        return {
            "results": self._finish(fused, q, limit, chars, wanted),
            "provider": provider.id,
            "model": provider.model,
            "mode": "hybrid",
            "fallback": None,
        }

    def _check_workspace(self) -> None:
        if self._workspace_ok == (self.store.file, self._version):
            return  # a clear (a new workspace) changes the version
        indexed = self.store.meta_get("workspace")
        current = str(self.cfg.require_workspace().resolve())
        if indexed is not None and indexed != current:
            raise IndexMismatch(
                f"index {self.index_path} holds workspace {indexed}, not {current}: "
                "run 'memindex index' to rebuild it for this workspace"
            )
        if indexed is not None:
            self._workspace_ok = (self.store.file, self._version)

    @staticmethod
    def _sources(sources: Any) -> list[str] | None:
        if sources is None or sources == "all":
            return None
        if isinstance(sources, str):
            sources = [sources]
        if not isinstance(sources, list) or not all(isinstance(s, str) for s in sources):
            raise InvalidParams("'sources' must be a list of 'memory' / 'sessions'")
        bad = [s for s in sources if s not in SOURCES]
        if bad:
            raise InvalidParams(f"unknown source(s) {bad}: use 'memory' or 'sessions'")
        return list(sources) or None

    def get(self, path: Any, *, start: Any = None, lines: Any = None) -> dict[str, Any]:
        if not isinstance(path, str):
            raise InvalidParams("'path' must be a string")
        first = _int_param(start, "from", 1, 1)
        count = _int_param(lines, "lines", 1, None)
        assert first is not None
        if path.startswith(SESSIONS_SOURCE + "/"):
            return self._get_transcript(path, first, count)
        display, text = read_document(self.cfg, path)
        return _slice(display, text, first, count, self.cfg.limits.maxGetBytes)

    def _get_transcript(self, path: str, first: int, count: int | None) -> dict[str, Any]:
        """Lines of a transcript, secrets redacted; citations use these line numbers.
        Streamed: any size, and a line that is not UTF-8 spoils only itself."""
        name = path[len(SESSIONS_SOURCE) + 1 :]
        if (
            "\x00" in name
            or not safefs.valid_utf8(name)
            or not is_transcript_name(name, self.cfg.sessions.includeRotated)
        ):
            raise PathRefused(f"refused path {path!r}: not a session transcript name")
        directory = self.cfg.sessions_dir()
        if directory is None:
            raise PathRefused(f"refused path {path!r}: sessions are disabled for this agent")
        with _reading(path), safefs.opened(directory, (name,), exact=True) as (fd, _):
            got = read_lines(fd, first, count, self.cfg.limits.maxGetBytes)
        picked = [redact(line) for line in got.lines]
        return _lines_result(path, picked, first, got.total, got.truncated)

    def status(self) -> dict[str, Any]:
        s = self.store
        last = s.meta_get("lastSync")
        fp = s.meta_get("fingerprint")
        counts = s.counts()
        self._versions = s.change_versions()
        ready = self._vector_ready()
        for src in SOURCES:
            counts.setdefault(src, {"files": 0, "chunks": 0})
        return {
            "version": __version__,
            "indexPath": str(self.index_path),
            "workspace": s.meta_get("workspace"),
            "sources": counts,
            "files": sum(c["files"] for c in counts.values()),
            "chunks": sum(c["chunks"] for c in counts.values()),
            "provider": self.provider.id if self.provider else None,
            "model": self.provider.model if self.provider else None,
            "dims": self.provider.dims if self.provider else None,
            "mode": "hybrid" if ready else "keyword",
            "vector": {
                "enabled": ready,
                "available": s.vec_version is not None,
                "reason": s.vector_error
                or (
                    None
                    if ready
                    else self.provider_note
                    if self.provider is None
                    else "vectors not built yet"
                ),
                "indexedModel": s.meta_get("vectorModel"),
                "pendingChunks": s.pending_count() if s.has_vectors() else None,
                "cacheEntries": s.cache_count(),
            },
            "sqlite": s.versions(),
            "fingerprint": json.loads(fp) if fp else None,
            "lastSync": json.loads(last) if last else None,
            "dirty": last is None,
            "pendingBatches": s.all_batch_jobs(),
            "skipped": s.skipped(),
            "sessionsDir": str(self.cfg.sessions_dir()) if self.cfg.sessions_dir() else None,
            "malformedLines": sum(c.malformed for c in s.session_cursors().values()),
            "indexBytes": s.size_bytes(),
            "checkedAt": time.time(),
        }
