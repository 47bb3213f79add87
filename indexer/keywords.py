"""An in-memory BM25 index for long-running processes, exact to the FTS5 path's ranking.

FTS5 ranks an OR query by calling the ranking function on every matching row (FTS5's
C ``bm25()`` took 12-20 ms at 100k chunks for a three-word question matching a
quarter of them, twice the whole vector scan; bm25.py's Python one takes about
four times as long). The daemon therefore keeps, per agent, the FTS5 index's own postings
(read through ``fts5vocab``, so the tokens are exactly FTS5's porter/unicode61
ones) as numpy arrays and scores a plain-words query with the same formula as
``Store.fts_search`` (bm25.py: k1 1.2, b 0.75, its column weights, Lucene's IDF,
document length over all columns), in 0.3-0.5 ms at 100k chunks.

It is only a cache: a query with phrases, exact tokens or CJK, a word FTS5 splits
in two, or an index below ``MIN_CHUNKS`` goes to FTS5. A snapshot older than the
index (the ``chunksVersion`` meta changes with every write) is rebuilt on a
background thread (seconds at 100k chunks) and meanwhile still answers, caught up
per query: its hits whose chunk is gone are dropped, and the chunks added since
(chunk ids only grow: every id above the snapshot's highest is new) are ranked by
FTS5 with the same formula and merged in. A writer committing all the time thus
never sends every search to FTS5's per-row Python ranking (bench/writer_bench.py).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import apsw
import numpy as np
import numpy.typing as npt

from . import bm25
from .errors import MemindexError
from .query import ParsedQuery
from .refresher import Refresher
from .store import FTS_TOKENIZER, FTS_WEIGHTS, IndexStore, Store

__all__ = ["MIN_CHUNKS", "KeywordIndex"]

log = logging.getLogger(__name__)

MIN_CHUNKS = 5_000  # below this FTS5 answers in a few ms: no snapshot
_K1, _B = bm25.K1, bm25.B
_COLUMNS = ("body", "heading", "path", "source")


@dataclass
class _Snapshot:
    version: str
    file: str
    max_id: int  # the highest chunk id it holds: every higher one was added after it
    # Per row: its chunk id and source code. Rows are grouped by source (by id
    # within one), so one source's rows are a range (``spans``) of every posting list.
    ids: npt.NDArray[np.int64]
    src: npt.NDArray[np.int8]
    codes: dict[str, int]
    spans: dict[int, tuple[int, int]]  # source code -> its rows [start, end)
    # term -> (rows, idf * f * (k1 + 1) / (f + k1 * (1 - b + b * dl / avgdl)) per row):
    # the term's BM25 part in each row, computed once per snapshot (the IDF counts
    # rows holding the term in any column).
    # Rows as int32: a quarter less memory (90 -> 67 MB at 100k short chunks) for
    # about 3% more scoring time.
    postings: dict[str, tuple[npt.NDArray[np.int32], npt.NDArray[np.float64]]]
    idfs: dict[str, float]  # each term's IDF (what FTS5 would count row by row)


class KeywordIndex:
    def __init__(self, *, min_chunks: int = MIN_CHUNKS, min_interval_s: float = 5.0) -> None:
        self.min_chunks = min_chunks
        self.min_interval_s = min_interval_s
        self._snap: _Snapshot | None = None
        self._refresh = Refresher("keyword-snapshot")
        self._tok_lock = threading.Lock()
        # FTS5's own tokenizer, called directly (about 0.4 us a word, against 55 us
        # for tokenizing through an in-memory FTS5 table and fts5vocab).
        self._tok_db = apsw.Connection(":memory:")
        name, *args = FTS_TOKENIZER.split()
        self._tok = self._tok_db.fts5_tokenizer(name, args)
        self._tokens: dict[str, tuple[str, ...]] = {}
        self._skipped: str | None = None

    @staticmethod
    def version(store: IndexStore, chunks_version: str | None = None) -> str:
        return f"{store.file}:{chunks_version or store.meta_get('chunksVersion')}"

    def ready(self, store: IndexStore, chunks_version: str | None = None) -> bool:
        """True if the snapshot matches ``store`` now; otherwise start (re)building
        one in the background and return False (the caller uses FTS5).
        ``chunks_version``: the caller's fresh read of the ``chunksVersion`` meta."""
        version = self.version(store, chunks_version)
        snap = self._snap
        if snap is not None and snap.version == version:
            return True
        if version == self._skipped:  # too small (or unsuitable) at this version
            return False
        self._refresh.start(self._build, store.file, version, min_interval_s=self.min_interval_s)
        return False

    @property
    def _building(self) -> bool:
        return self._refresh.busy

    def wait_ready(self, store: IndexStore, timeout: float = 120.0) -> bool:
        """Block until the snapshot matches ``store`` (benchmarks and tests)."""
        deadline = time.monotonic() + timeout
        self.min_interval_s = 0.0
        while time.monotonic() < deadline:
            if self.ready(store):
                return True
            time.sleep(0.02)
        return False

    def _build(self, file: Path, version: str) -> None:
        try:
            snap = self._load(file, version)
            if snap is not None:
                self._snap = snap
            else:
                self._skipped = version
        except (apsw.Error, OSError, ValueError, MemindexError) as exc:
            log.warning("keyword snapshot of %s failed: %s", file, exc)

    def _load(self, file: Path, version: str) -> _Snapshot | None:
        with Store(file, readonly=True) as store, store.keyword_postings(self.min_chunks) as got:
            if got is None or f"{file}:{got.chunks_version}" != version:
                return None
            n = len(got.chunks)
            ids = np.fromiter((c[0] for c in got.chunks), dtype=np.int64, count=n)
            codes: dict[str, int] = {}
            src = np.fromiter(
                (codes.setdefault(c[1], len(codes)) for c in got.chunks), dtype=np.int8, count=n
            )
            order = np.argsort(src, kind="stable")  # rows grouped by source
            row_of = np.empty(order.shape[0], dtype=np.int64)
            row_of[order] = np.arange(order.shape[0])
            weight = dict(zip(_COLUMNS, (*FTS_WEIGHTS, 0.0), strict=True))
            per_term: dict[str, list[tuple[npt.NDArray[np.int64], float]]] = {}
            every: list[npt.NDArray[np.int64]] = []
            for term, col, docs in got.terms:
                pos = row_of[np.searchsorted(ids, docs)]
                every.append(pos)
                per_term.setdefault(term, []).append((pos, weight.get(col, 0.0)))
        ids, src = ids[order], src[order]
        spans = {
            code: (int(np.searchsorted(src, code)), int(np.searchsorted(src, code, "right")))
            for code in codes.values()
        }
        n = len(ids)
        dl = np.bincount(np.concatenate(every), minlength=n).astype(np.float64) if every else None
        if dl is None or dl.sum() == 0:
            return None
        norm = _K1 * (1 - _B + _B * dl / (dl.sum() / n))
        postings: dict[str, tuple[npt.NDArray[np.int32], npt.NDArray[np.float64]]] = {}
        idfs: dict[str, float] = {}
        for term, parts in per_term.items():
            docs = np.concatenate([p for p, _ in parts])
            w = np.concatenate([np.full(p.shape[0], wt) for p, wt in parts])
            uniq: npt.NDArray[np.int64]
            uniq, inv = np.unique(docs, return_inverse=True)
            freq = np.bincount(inv, weights=w, minlength=uniq.shape[0]).astype(np.float64)
            keep = freq > 0
            rows, f = uniq[keep], freq[keep]
            idf = idfs[term] = bm25.idf(n, uniq.shape[0])
            postings[term] = (rows.astype(np.int32), idf * (f * (_K1 + 1) / (f + norm[rows])))
        max_id = int(ids.max()) if n else 0
        return _Snapshot(version, str(file), max_id, ids, src, codes, spans, postings, idfs)

    def _word_tokens(self, word: str) -> tuple[str, ...]:
        got = self._tokens.get(word)
        if got is None:
            with self._tok_lock:
                found = self._tok(
                    word.encode("utf-8"),
                    apsw.FTS5_TOKENIZE_DOCUMENT,
                    None,
                    include_offsets=False,
                    include_colocated=False,
                )
            got = tuple(str(t) for t in found)
            if len(self._tokens) > 50_000:
                self._tokens.clear()
            self._tokens[word] = got
        return got

    def search(
        self,
        store: IndexStore,
        q: ParsedQuery,
        limit: int,
        sources: list[str] | None,
        *,
        version: str | None = None,
    ) -> list[tuple[int, float, str]] | None:
        """Top ``limit`` (chunk id, FTS5-style rank: negative, lower is better,
        source) for a plain-words query, or None when FTS5 has to answer it."""
        got = self.search_parts(store, q, limit, [sources], version=version)
        return None if got is None else got[0]

    def search_parts(
        self,
        store: IndexStore,
        q: ParsedQuery,
        limit: int,
        parts: Sequence[Sequence[str] | None],
        *,
        version: str | None = None,
    ) -> list[list[tuple[int, float, str]]] | None:
        """``search`` for each part (a list of sources, or None for all), scoring
        the query once."""
        if q.required or q.exact_parts or q.cjk or not q.terms:
            return None
        current = self.ready(store, version)  # if not, a rebuild has started
        snap = self._snap
        if snap is None or snap.file != str(store.file):
            return None
        if not current and self._skipped == self.version(store, version):
            return None  # too small now: FTS5 alone is fast
        got = self._score(snap, q, limit if current else 2 * limit, parts)
        if got is None or current:
            return got
        return self._catch_up(store, snap, q, limit, parts, got)

    def _catch_up(
        self,
        store: IndexStore,
        snap: _Snapshot,
        q: ParsedQuery,
        limit: int,
        parts: Sequence[Sequence[str] | None],
        got: list[list[tuple[int, float, str]]],
    ) -> list[list[tuple[int, float, str]]]:
        """A stale snapshot's hits made current: those whose chunk is gone dropped
        (an id that still exists still names the same text), the chunks added since
        ranked by FTS5 and merged in by rank."""
        alive = store.chunk_hashes(sorted({cid for hits in got for cid, _, _ in hits}))
        # The snapshot's IDFs (FTS5 would count every row holding the term again).
        idfs = {t: snap.idfs[t] for w in q.terms for t in self._word_tokens(w) if t in snap.idfs}
        out = []
        for hits, sources in zip(got, parts, strict=True):
            new = store.fts_search(
                q.fts_expression(),
                limit,
                list(sources) if sources else None,
                after_id=snap.max_id,
                idfs=idfs,
            )
            merged = [h for h in hits if h[0] in alive]
            merged += [(r.id, r.rank, r.source) for r in new]
            merged.sort(key=lambda h: h[1])
            out.append(merged[:limit])
        return out

    def _score(
        self,
        snap: _Snapshot,
        q: ParsedQuery,
        limit: int,
        parts: Sequence[Sequence[str] | None],
    ) -> list[list[tuple[int, float, str]]] | None:
        posts: list[tuple[npt.NDArray[np.int32], npt.NDArray[np.float64]]] = []
        for word in q.terms:
            toks = self._word_tokens(word)
            if len(toks) != 1:
                return None  # FTS5 would make it a phrase: let FTS5 answer
            post = snap.postings.get(toks[0])
            if post is not None:
                posts.append(post)
        if not posts:
            return [[] for _ in parts]
        # One term: its own scores. More: summed into one array over every row.
        scores = None if len(posts) == 1 else _summed(snap.ids.shape[0], posts)
        names = {code: name for name, code in snap.codes.items()}
        out: list[list[tuple[int, float, str]]] = []
        for sources in parts:
            wanted = {snap.codes[s] for s in sources if s in snap.codes} if sources else None
            if wanted is None or wanted == set(snap.spans):
                pieces = posts
            elif len(wanted) == 1:  # its rows are a range of every posting list
                start, end = snap.spans[wanted.pop()]
                pieces = []
                for docs, weight in posts:
                    lo, hi = np.searchsorted(docs, (start, end))
                    pieces.append((docs[lo:hi], weight[lo:hi]))
            else:  # no sources of this index, or some of three or more
                pieces = []
                for docs, weight in posts:
                    keep = np.isin(snap.src[docs], list(wanted))
                    pieces.append((docs[keep], weight[keep]))
            cand = pieces[0][0] if len(pieces) == 1 else np.concatenate([d for d, _ in pieces])
            got = pieces[0][1] if scores is None else scores[cand]
            room = limit * len(posts)  # enough to hold ``limit`` distinct rows
            if cand.shape[0] > room:
                keep = np.sort(np.argpartition(got, cand.shape[0] - room)[cand.shape[0] - room :])
                cand, got = cand[keep], got[keep]
            if len(posts) > 1:
                cand, first = np.unique(cand, return_index=True)
                got = got[first]
            order = np.argsort(-got, kind="stable")[:limit]
            rows = cand[order]
            ids, srcs = snap.ids[rows].tolist(), snap.src[rows].tolist()
            ranks = (-got[order]).tolist()
            out.append([(ids[k], ranks[k], names[srcs[k]]) for k in range(len(ids))])
        return out


def _summed(
    n: int, posts: list[tuple[npt.NDArray[np.int32], npt.NDArray[np.float64]]]
) -> npt.NDArray[np.float64]:
    """Every row's BM25 summed over the terms, in query order (as FTS5 sums them)."""
    scores = np.zeros(n, dtype=np.float64)
    scores[posts[0][0]] = posts[0][1]
    for docs, weight in posts[1:]:
        np.add.at(scores, docs, weight)  # measured faster than scores[docs] += w
    return scores
