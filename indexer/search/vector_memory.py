"""Vector neighbours: in-memory matrices for long-running processes, the store's own
vector index (sqlite-vec, pgvector) else.

sqlite-vec's vec0 KNN scans its table (about 100-130 ms at 100k x 384 on this
machine) while a numpy matrix product over the same vectors takes about 6 ms, so the
daemon keeps each agent's vectors in memory (``VectorPart``, one per snapshot:
live.py), shared by its reader threads. One-shot CLI searches use sqlite-vec.

The vectors live in segments (segments.py) like the keyword postings: one read in
full (1.2 s at 100k x 384), then one per batch of changes holding the vectors
embedded since (read by chunk id from the store's change feed), with replaced and
deleted chunks marked dead. A write therefore costs a read of what it changed, never
a reload of every vector.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from indexer.search.candidates import ChunkRows
from indexer.search.segments import Rows, group_rows, kill_rows, merged_rows, settle, with_codes
from indexer.store import IndexStore

__all__ = ["VectorPart", "stored_neighbours"]

Neighbours = list[tuple[int, float, str]]  # (chunk id, cosine, source)


@dataclass(frozen=True)
class VectorSegment(Rows):
    mat: npt.NDArray[np.float32]  # one unit-length row per chunk


def _segment(
    rows: Sequence[tuple[int, str, bytes]], codes: dict[str, int], dims: int
) -> VectorSegment:
    """A segment of (chunk id, source, float32 vector bytes) rows."""
    n = len(rows)
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=n)
    src = np.fromiter((codes[r[1]] for r in rows), dtype=np.int8, count=n)
    blob = b"".join(r[2] for r in rows)
    mat = np.frombuffer(blob, dtype="<f4").reshape(n, dims) if n else np.zeros((0, dims), "<f4")
    order, spans = group_rows(ids, src)
    return VectorSegment(
        ids[order],
        src[order],
        spans,
        np.ones(n, dtype=bool),
        0,
        np.ascontiguousarray(mat[order], dtype=np.float32),
    )


def _merge(a: VectorSegment, b: VectorSegment) -> VectorSegment:
    ids, src, order, spans = merged_rows(a, b)
    mat = np.concatenate([a.mat[a.alive], b.mat[b.alive]])[order]
    return VectorSegment(ids, src, spans, np.ones(ids.shape[0], bool), 0, mat)


@dataclass(frozen=True)
class VectorPart:
    """The vector half of a snapshot, for one embedding model (``key``)."""

    segments: tuple[VectorSegment, ...]
    codes: dict[str, int]  # source -> code (grows; never reassigned)
    seq: int  # the change feed position it is current to
    key: str  # the index's vectorKey: provider, model and dimensions
    dims: int

    @classmethod
    def build(cls, store: IndexStore, key: str) -> VectorPart | None:
        """Every vector of ``store``, read in one transaction; None if it has none."""
        codes: dict[str, int] = {}
        with store.read_snapshot():
            seq = store.change_seq()
            rows = [(cid, src, blob) for cid, src, _, blob in store.all_vectors()]
        if not rows:
            return None
        for _, src, _ in rows:
            codes.setdefault(src, len(codes))
        dims = len(rows[0][2]) // 4
        return cls((_segment(rows, codes, dims),), codes, seq, key, dims)

    def __len__(self) -> int:
        return sum(s.live for s in self.segments)

    def apply(
        self, seq: int, dead: Sequence[int], rows: Sequence[tuple[int, str, bytes]]
    ) -> VectorPart:
        """This part with ``dead`` chunks' vectors gone and ``rows`` (chunk id, source,
        vector) added; a chunk in both was embedded again."""
        segments = []
        for seg in self.segments:
            got = kill_rows(seg, dead)
            segments.append(seg if got is None else got[0])
        codes = self.codes
        rows = [r for r in rows if len(r[2]) == 4 * self.dims]
        if rows:
            codes = with_codes(codes, (r[1] for r in rows))
            segments.append(_segment(rows, codes, self.dims))
        return replace(
            self, segments=tuple(settle(segments, _merge)), codes=codes, seq=max(seq, self.seq)
        )

    def search(
        self,
        query: npt.NDArray[np.float32],
        k: int,
        parts: Sequence[Sequence[str] | None] = (None,),
    ) -> list[Neighbours]:
        """Top-k (chunk id, cosine similarity, source) of each part (a list of
        sources, or None for all), one pass over each segment; vectors are unit
        length."""
        q = query.reshape(-1).astype(np.float32)
        if q.shape[0] != self.dims:
            return [[] for _ in parts]
        names = {code: name for name, code in self.codes.items()}
        best: list[list[tuple[float, int, int]]] = [[] for _ in parts]
        for seg in self.segments:
            if seg.live == 0:
                continue
            sims = seg.mat @ q
            if seg.dead:
                sims[~seg.alive] = -np.inf
            for n, sources in enumerate(parts):
                if sources:
                    spans = [
                        seg.spans[c] for c in {self.codes.get(s) for s in sources} if c in seg.spans
                    ]
                else:
                    spans = list(seg.spans.values())
                for start, end in spans:  # a slice per source: no copy, no masking
                    part = sims[start:end]
                    kk = min(k, part.shape[0])
                    top = np.argpartition(part, part.shape[0] - kk)[part.shape[0] - kk :]
                    top = top[np.isfinite(part[top])]
                    best[n] += zip(
                        part[top].tolist(),
                        seg.ids[start + top].tolist(),
                        seg.src[start + top].tolist(),
                        strict=True,
                    )
        out = []
        for hits in best:
            hits.sort(key=lambda h: (-h[0], h[1]))
            out.append([(cid, sim, names[code]) for sim, cid, code in hits[:k]])
        return out


def stored_neighbours(
    store: IndexStore,
    query: npt.NDArray[np.float32],
    k: int,
    sources: Sequence[str] | None = None,
    rows: ChunkRows | None = None,
) -> list[tuple[int, float]]:
    """Top-k from the store's own vector index (sqlite-vec, pgvector: cosine
    distance -> similarity), source-filtered; for processes with no snapshot.
    ``rows``: the search's rows, so the ones read to filter are not read again."""
    if not store.has_vectors():
        return []
    fetch = k * 4 if sources else k
    hits = store.knn(query.astype("<f4").tobytes(), fetch)
    if sources:
        rows = rows if rows is not None else ChunkRows(store)
        rows.need(i for i, _ in hits)
        hits = [(i, d) for i, d in hits if (r := rows.get(i)) is not None and r.source in sources]
    return [(i, 1.0 - d) for i, d in hits[:k]]
