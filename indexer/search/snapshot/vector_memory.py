"""Vector neighbours: in-memory matrices for long-running processes, the store's own
vector index (sqlite-vec, pgvector) else.

sqlite-vec's vec0 KNN scans its table (about 100-130 ms at 100k x 384 on this
machine) while a numpy matrix product over the same vectors takes about 6 ms, so the
daemon keeps each agent's vectors in memory (``VectorPart``, one per snapshot:
live.py), shared by its reader threads. One-shot CLI searches use sqlite-vec.

The vectors live in segments (segments.py) like the keyword postings: one read in
full, then one per batch of changes holding the vectors embedded since (read by
chunk id from the store's change feed), with replaced and deleted chunks marked
dead. A write therefore costs a read of what it changed, never a reload of every
vector.

Below ``QUANTIZE_AT`` vectors a segment keeps them as float32 and a search scores
every one exactly. From there on (a million chunks: 1.5 GB of float32, whose scan is
bound by memory bandwidth at ~77 ms here) a part keeps each vector as one sign bit
per dimension (of the vector minus the part's mean, so the bits split the corpus
evenly) and as int8 with a scale per row: 436 bytes instead of 1,536 at 384
dimensions. A search ranks every row by the Hamming distance of its bits to the
query's (six 64-bit words per row, stored word-major so each word is one
contiguous scan: ~5 ms at a million rows), then scores the ``POOL`` closest (at
least 1%) by int8 · query and keeps the best k (docs/lab/retrieval-log.md, "A million
chunks").
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from indexer.search.candidates import ChunkRows
from indexer.search.snapshot.segments import (
    Rows,
    group_rows,
    kill_rows,
    merged_rows,
    settle,
    with_codes,
)
from indexer.store import IndexStore

__all__ = ["POOL", "QUANTIZE_AT", "VectorPart", "release_freed_memory", "stored_neighbours"]

Neighbours = list[tuple[int, float, str]]  # (chunk id, cosine, source)

QUANTIZE_AT = 200_000  # vectors in a part from which it keeps them quantized
# quantized: rows scored by int8 per source (at least 1% of them), of those nearest by
# their bits. On SciFact-dev's real vectors and queries the nearest 1% by bits held
# 0.944 of the exact top 10, the nearest 3% 0.990 (bench/quantize_recall.py).
POOL = 4096
_READ_BATCH = 50_000  # vectors read from the store at a time

F32 = npt.NDArray[np.float32]


@dataclass(frozen=True)
class VectorSegment(Rows):
    # exact: one unit-length float32 row per chunk; None when quantized
    mat: F32 | None
    # quantized: int8 rows (vector ~ codes * scale), and sign bits word-major
    codes: npt.NDArray[np.int8] | None = None
    scale: F32 | None = None
    bits: npt.NDArray[np.uint64] | None = None  # (words, rows)

    def vectors(self, rows: npt.NDArray[np.int64]) -> F32:
        """The (approximate, when quantized) vectors of ``rows``."""
        if self.mat is not None:
            return self.mat[rows]
        assert self.codes is not None and self.scale is not None
        return self.codes[rows].astype(np.float32) * self.scale[rows, None]


def _sign_bits(mat: F32, centre: F32) -> npt.NDArray[np.uint64]:
    """One bit per dimension of each row of ``mat`` (above ``centre``), packed in
    64-bit words, word-major: (words, rows)."""
    packed = np.packbits(mat > centre, axis=1)
    pad = (-packed.shape[1]) % 8
    if pad:
        packed = np.pad(packed, ((0, 0), (0, pad)))
    return np.ascontiguousarray(packed.view(np.uint64).T)


def _quantized(mat: F32, centre: F32) -> tuple[npt.NDArray[np.int8], F32, npt.NDArray[np.uint64]]:
    """int8 rows, their scales and their sign bits."""
    peak = np.abs(mat).max(axis=1) if mat.shape[0] else np.zeros(0, np.float32)
    scale = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
    codes = np.rint(mat / scale[:, None]).astype(np.int8)
    return codes, scale, _sign_bits(mat, centre)


def _segment(
    ids: npt.NDArray[np.int64],
    src: npt.NDArray[np.int8],
    mat: F32 | None,
    quant: tuple[npt.NDArray[np.int8], F32, npt.NDArray[np.uint64]] | None = None,
) -> VectorSegment:
    """A segment of rows in any order (put in ``group_rows`` order here), either
    float32 ``mat`` or ``quant`` (codes, scales, word-major bits)."""
    order, spans = group_rows(ids, src)
    alive = np.ones(ids.shape[0], dtype=bool)
    if quant is None:
        assert mat is not None
        return VectorSegment(ids[order], src[order], spans, alive, 0, mat[order])
    codes, scale, bits = quant
    return VectorSegment(
        ids[order], src[order], spans, alive, 0, None,
        codes[order], scale[order], np.ascontiguousarray(bits[:, order]),
    )  # fmt: skip


def _rows(
    rows: Sequence[tuple[int, str, bytes]], codes: dict[str, int], dims: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int8], F32]:
    n = len(rows)
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=n)
    src = np.fromiter((codes[r[1]] for r in rows), dtype=np.int8, count=n)
    blob = b"".join(r[2] for r in rows)
    mat = np.frombuffer(blob, dtype="<f4").reshape(n, dims) if n else np.zeros((0, dims), "<f4")
    return ids, src, mat.astype(np.float32, copy=False)


def _merge(a: VectorSegment, b: VectorSegment) -> VectorSegment:
    ids, src, order, spans = merged_rows(a, b)
    alive = np.ones(ids.shape[0], bool)
    if a.mat is not None and b.mat is not None:
        mat = np.concatenate([a.mat[a.alive], b.mat[b.alive]])[order]
        return VectorSegment(ids, src, spans, alive, 0, mat)
    assert a.codes is not None and b.codes is not None
    assert a.scale is not None and b.scale is not None
    assert a.bits is not None and b.bits is not None
    codes = np.concatenate([a.codes[a.alive], b.codes[b.alive]])[order]
    scale = np.concatenate([a.scale[a.alive], b.scale[b.alive]])[order]
    bits = np.concatenate([a.bits[:, a.alive], b.bits[:, b.alive]], axis=1)[:, order]
    bits = np.ascontiguousarray(bits)  # word-major: each word one contiguous scan
    return VectorSegment(ids, src, spans, alive, 0, None, codes, scale, bits)


def _batches(rows: Iterable[tuple[int, str, str, bytes]]) -> Iterator[list[tuple[int, str, bytes]]]:
    batch: list[tuple[int, str, bytes]] = []
    for cid, src, _, blob in rows:
        batch.append((cid, src, blob))
        if len(batch) >= _READ_BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def release_freed_memory() -> None:
    """Hand memory freed after a full read back to the system (glibc keeps freed
    small blocks in its heap: a million vectors read as bytes left ~2 GB of RSS
    behind). Nothing where there is no glibc."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim(0)
    except (OSError, AttributeError):
        pass


@dataclass(frozen=True)
class VectorPart:
    """The vector half of a snapshot, for one embedding model (``key``)."""

    segments: tuple[VectorSegment, ...]
    codes: dict[str, int]  # source -> code (grows; never reassigned)
    seq: int  # the change feed position it is current to
    key: str  # the index's vectorKey: provider, model and dimensions
    dims: int
    centre: F32 | None = None  # quantized: what the sign bits are taken against
    quantize_at: int = QUANTIZE_AT

    @classmethod
    def build(
        cls, store: IndexStore, key: str, *, quantize_at: int = QUANTIZE_AT
    ) -> VectorPart | None:
        """Every vector of ``store``, read in one transaction a batch at a time (the
        float32 vectors of a large index are never all held at once); None if it has
        none."""
        codes: dict[str, int] = {}
        dims = 0
        exact: list[tuple[npt.NDArray[np.int64], npt.NDArray[np.int8], F32]] = []
        quant: list[tuple[npt.NDArray[np.int64], npt.NDArray[np.int8], tuple[
            npt.NDArray[np.int8], F32, npt.NDArray[np.uint64]]]] = []  # fmt: skip
        centre: F32 | None = None
        total = 0
        with store.read_snapshot():
            seq = store.change_seq()
            for batch in _batches(store.all_vectors()):
                if not dims:
                    dims = len(batch[0][2]) // 4
                batch = [r for r in batch if len(r[2]) == 4 * dims]
                for _, src, _ in batch:
                    if src not in codes:
                        codes[src] = len(codes)
                ids, src_codes, mat = _rows(batch, codes, dims)
                total += ids.shape[0]
                if centre is None and total >= quantize_at:
                    centre = np.concatenate([m for _, _, m in exact] + [mat]).mean(axis=0)
                    quant = [(i, s, _quantized(m, centre)) for i, s, m in exact]
                    exact = []
                if centre is None:
                    exact.append((ids, src_codes, mat.copy()))
                else:
                    quant.append((ids, src_codes, _quantized(mat, centre)))
        if total == 0:
            return None
        if centre is None:
            seg = _segment(
                np.concatenate([i for i, _, _ in exact]),
                np.concatenate([s for _, s, _ in exact]),
                np.concatenate([m for _, _, m in exact]),
            )
        else:
            seg = _segment(
                np.concatenate([i for i, _, _ in quant]),
                np.concatenate([s for _, s, _ in quant]),
                None,
                (
                    np.concatenate([q[0] for _, _, q in quant]),
                    np.concatenate([q[1] for _, _, q in quant]),
                    np.concatenate([q[2] for _, _, q in quant], axis=1),
                ),
            )
        return cls((seg,), codes, seq, key, dims, centre, quantize_at)

    @property
    def quantized(self) -> bool:
        return self.centre is not None

    def __len__(self) -> int:
        return sum(s.live for s in self.segments)

    def apply(
        self, seq: int, dead: Sequence[int], rows: Sequence[tuple[int, str, bytes]]
    ) -> VectorPart:
        """This part with ``dead`` chunks' vectors gone and ``rows`` (chunk id, source,
        vector) added; a chunk in both was embedded again. A part that grows to
        ``quantize_at`` vectors is quantized here, once."""
        segments = []
        for seg in self.segments:
            got = kill_rows(seg, dead)
            segments.append(seg if got is None else got[0])
        codes = self.codes
        centre = self.centre
        rows = [r for r in rows if len(r[2]) == 4 * self.dims]
        if rows:
            codes = with_codes(codes, [r[1] for r in rows])
            ids, src, mat = _rows(rows, codes, self.dims)
            if centre is None and sum(s.live for s in segments) + len(rows) >= self.quantize_at:
                live = [s.mat[s.alive] for s in segments if s.mat is not None] + [mat]
                centre = np.concatenate(live).mean(axis=0)
                segments = [_quantize_segment(s, centre) for s in segments]
            if centre is None:
                segments.append(_segment(ids, src, mat.copy()))
            else:
                segments.append(_segment(ids, src, None, _quantized(mat, centre)))
        return replace(
            self,
            segments=tuple(settle(segments, _merge)),
            codes=codes,
            seq=max(seq, self.seq),
            centre=centre,
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
        qbits = None if self.centre is None else _sign_bits(q[None, :], self.centre)[:, 0]
        best: list[list[tuple[float, int, int]]] = [[] for _ in parts]
        for seg in self.segments:
            if seg.live == 0:
                continue
            if qbits is None:
                assert seg.mat is not None
                sims = seg.mat @ q
                if seg.dead:
                    sims[~seg.alive] = -np.inf
                score = None
            else:
                sims, score = None, _distances(seg, qbits)
            for n, sources in enumerate(parts):
                if sources:
                    spans = [
                        seg.spans[c] for c in {self.codes.get(s) for s in sources} if c in seg.spans
                    ]
                else:
                    spans = list(seg.spans.values())
                for start, end in spans:  # a slice per source: no copy, no masking
                    if sims is not None:
                        part = sims[start:end]
                        kk = min(k, part.shape[0])
                        top = np.argpartition(part, part.shape[0] - kk)[part.shape[0] - kk :]
                        top = top[np.isfinite(part[top])]
                        got, at = part[top], start + top
                    else:
                        assert score is not None
                        got, at = _rescored(seg, score, start, end, q, k)
                    best[n] += zip(
                        got.tolist(), seg.ids[at].tolist(), seg.src[at].tolist(), strict=True
                    )
        out = []
        for found in best:
            found.sort(key=lambda h: (-h[0], h[1]))
            out.append([(cid, sim, names[code]) for sim, cid, code in found[:k]])
        return out


def _quantize_segment(seg: VectorSegment, centre: F32) -> VectorSegment:
    if seg.mat is None:
        return seg
    codes, scale, bits = _quantized(seg.mat, centre)
    return replace(seg, mat=None, codes=codes, scale=scale, bits=bits)


_FAR = np.uint16(0xFFFF)


def _distances(seg: VectorSegment, qbits: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint16]:
    """The Hamming distance of each row's bits to the query's (dead rows: the
    farthest there is)."""
    assert seg.bits is not None
    dist: npt.NDArray[np.uint16] = np.bitwise_count(seg.bits[0] ^ qbits[0]).astype(np.uint16)
    for w in range(1, seg.bits.shape[0]):
        dist += np.bitwise_count(seg.bits[w] ^ qbits[w])
    if seg.dead:
        dist[~seg.alive] = _FAR
    return dist


def _rescored(
    seg: VectorSegment,
    dist: npt.NDArray[np.uint16],
    start: int,
    end: int,
    q: F32,
    k: int,
) -> tuple[F32, npt.NDArray[np.int64]]:
    """The best ``k`` of rows [start, end) by int8 cosine, among the ``POOL`` nearest
    by their bits: (similarities, rows)."""
    part = dist[start:end]
    pool = min(max(POOL, 16 * k, part.shape[0] // 100), part.shape[0])
    near = np.argpartition(part, pool - 1)[:pool] if pool < part.shape[0] else np.arange(pool)
    near = near[seg.alive[start + near]]
    at = start + near
    sims = seg.vectors(at) @ q
    kk = min(k, sims.shape[0])
    top = np.argpartition(sims, sims.shape[0] - kk)[sims.shape[0] - kk :] if kk else near[:0]
    return sims[top], at[top]


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
        rows.need([i for i, _ in hits])
        hits = [(i, d) for i, d in hits if (r := rows.get(i)) is not None and r.source in sources]
    return [(i, 1.0 - d) for i, d in hits[:k]]
