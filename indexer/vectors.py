"""Vector retrieval: an in-memory matrix for long-running processes.

sqlite-vec's vec0 KNN scans its table (about 100-130 ms at 100k x 384 on this
machine) while a numpy matrix product over the same vectors takes about 11 ms, so the
daemon keeps one matrix per agent, shared by its reader threads and reloaded when
the index's ``vectorsVersion`` changes. One-shot CLI searches use sqlite-vec.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .store import Store

__all__ = ["VectorMatrix", "knn_sqlite"]


@dataclass(frozen=True)
class _Loaded:
    """One load of the vectors, swapped in whole so a search never mixes two."""

    ids: npt.NDArray[np.int64]
    mat: npt.NDArray[np.float32]
    src: npt.NDArray[np.int8]
    names: dict[int, str]  # source code -> source
    rows_of: dict[str, npt.NDArray[np.int64]]  # source -> its rows, in order


_EMPTY = _Loaded(
    np.zeros(0, dtype=np.int64),
    np.zeros((0, 0), dtype=np.float32),
    np.zeros(0, dtype=np.int8),
    {},
    {},
)


class VectorMatrix:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.version: str | None = None
        self._loaded = _EMPTY

    def __len__(self) -> int:
        return int(self._loaded.ids.shape[0])

    @property
    def matrix(self) -> npt.NDArray[np.float32]:
        return self._loaded.mat

    def refresh(self, store: Store, version: str | None = None) -> None:
        """Reload if the index's vectors changed since the last load (``version``:
        the caller's fresh read of the ``vectorsVersion`` meta)."""
        version = version or store.meta_get("vectorsVersion")
        if version == self.version:
            return
        with self._lock:
            if version == self.version:
                return
            ids: list[int] = []
            srcs: list[int] = []
            blobs: list[bytes] = []
            codes: dict[str, int] = {}
            for cid, source, blob in store.all_vectors():
                ids.append(cid)
                srcs.append(codes.setdefault(source, len(codes)))
                blobs.append(blob)
            if blobs:
                mat = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), -1)
            else:
                mat = np.zeros((0, 0), dtype=np.float32)
            src = np.asarray(srcs, dtype=np.int8)
            self._loaded = _Loaded(
                np.asarray(ids, dtype=np.int64),
                np.ascontiguousarray(mat, dtype=np.float32),
                src,
                {code: name for name, code in codes.items()},
                {name: np.flatnonzero(src == code) for name, code in codes.items()},
            )
            self.version = version

    def search(
        self,
        query: npt.NDArray[np.float32],
        k: int,
        parts: Sequence[Sequence[str] | None] = (None,),
    ) -> list[tuple[int, float, str]]:
        """Top-k (chunk id, cosine similarity, source) of each part (a list of
        sources, or None for all), from one pass over the matrix; vectors are unit
        length."""
        v = self._loaded
        if v.ids.shape[0] == 0 or v.mat.shape[1] != query.shape[-1]:
            return []
        sims = v.mat @ query.reshape(-1)
        out: list[tuple[int, float, str]] = []
        for sources in parts:
            if sources:  # the part's own rows: no masking pass over all of them
                picked = [v.rows_of[s] for s in sources if s in v.rows_of]
                if not picked:
                    continue
                rows = picked[0] if len(picked) == 1 else np.sort(np.concatenate(picked))
                part = sims[rows]
            else:
                rows, part = None, sims
            n = part.shape[0]
            kk = min(k, n)
            top = np.argpartition(part, n - kk)[n - kk :]
            top = top[np.argsort(-part[top])]
            at = top if rows is None else rows[top]
            out += [
                (cid, sim, v.names[code])
                for cid, sim, code in zip(
                    v.ids[at].tolist(), part[top].tolist(), v.src[at].tolist(), strict=True
                )
            ]
        return out


def knn_sqlite(
    store: Store, query: npt.NDArray[np.float32], k: int, sources: Sequence[str] | None = None
) -> list[tuple[int, float]]:
    """Top-k through sqlite-vec (cosine distance -> similarity), source-filtered."""
    if not store.has_vectors():
        return []
    fetch = k * 4 if sources else k
    hits = store.knn(query.astype("<f4").tobytes(), fetch)
    if sources:
        rows = store.chunk_rows([i for i, _ in hits])
        hits = [(i, d) for i, d in hits if i in rows and rows[i].source in sources]
    return [(i, 1.0 - d) for i, d in hits[:k]]
