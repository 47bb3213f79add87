"""Vector retrieval: an in-memory matrix for long-running processes.

sqlite-vec's vec0 KNN scans its table (about 100-130 ms at 100k x 384 on this
machine) while a numpy matrix product over the same vectors takes about 11 ms, so the
daemon keeps one matrix per agent, shared by its reader threads and reloaded when
the index's ``vectorsVersion`` changes. One-shot CLI searches use sqlite-vec.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from .store import Store

__all__ = ["VectorMatrix", "knn_sqlite"]


class VectorMatrix:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.version: str | None = None
        self._ids: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self._mat: npt.NDArray[np.float32] = np.zeros((0, 0), dtype=np.float32)
        self._src: npt.NDArray[np.int8] = np.zeros(0, dtype=np.int8)
        self._codes: dict[str, int] = {}

    def __len__(self) -> int:
        return int(self._ids.shape[0])

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
            self._ids = np.asarray(ids, dtype=np.int64)
            self._mat = np.ascontiguousarray(mat, dtype=np.float32)
            self._src = np.asarray(srcs, dtype=np.int8)
            self._codes = codes
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
        ids, mat, src, codes = self._ids, self._mat, self._src, self._codes
        if ids.shape[0] == 0 or mat.shape[1] != query.shape[-1]:
            return []
        sims = mat @ query.reshape(-1)
        names = {code: name for name, code in codes.items()}
        out: list[tuple[int, float, str]] = []
        for sources in parts:
            part = sims
            if sources:
                wanted = [codes[s] for s in sources if s in codes]
                part = np.where(np.isin(src, wanted), sims, -np.inf)
            n = part.shape[0]
            kk = min(k, n)
            top = np.argpartition(part, n - kk)[n - kk :]
            top = top[np.argsort(-part[top])]
            out += [
                (cid, sim, names[code])
                for cid, sim, code in zip(
                    ids[top].tolist(), part[top].tolist(), src[top].tolist(), strict=True
                )
                if sim != -math.inf
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
