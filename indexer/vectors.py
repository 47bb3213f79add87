"""Vector retrieval: an in-memory matrix for long-running processes.

sqlite-vec's vec0 KNN scans its table (about 100-130 ms at 100k x 384 on this
machine) while a numpy matrix product over the same vectors takes about 11 ms, so the
daemon keeps one matrix per agent, shared by its reader threads. One-shot CLI
searches use sqlite-vec.

No search waits for a reload. When the index's ``vectorsVersion`` changes
(``fresh_search``), a background thread loads the new vectors (1.2 s at 100k x
384; one load at a time, spaced by twice the last one's time: refresher.py) while
searches go on over the previous load, whose answers are checked against the
index: a neighbour whose chunk is gone or now holds other text (a reused id) is
dropped. Chunks embedded since that load are missing from the vector side until the
reload is swapped in; the keyword side finds them meanwhile. With no usable load
(the first, or after a rebuild into a new file) the caller asks sqlite-vec.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from .refresher import Refresher
from .store import STORE_ERRORS, IndexStore, Store

log = logging.getLogger(__name__)

__all__ = ["VectorMatrix", "knn_sqlite"]


@dataclass(frozen=True)
class _Loaded:
    """One load of the vectors, swapped in whole so a search never mixes two."""

    ids: npt.NDArray[np.int64]
    mat: npt.NDArray[np.float32]
    src: npt.NDArray[np.int8]
    names: dict[int, str]  # source code -> source
    rows_of: dict[str, tuple[int, int]]  # source -> its rows (grouped by source)
    hashes: dict[int, str]  # chunk id -> the hash of the text its vector embeds
    file: str = ""  # the index (generation) file it was read from
    version: str | None = None  # that file's vectorsVersion when it was read

    def of(self, store: IndexStore, version: str | None) -> bool:
        """Whether this is a load of ``store``'s file at ``version``."""
        return self.file == str(store.file) and self.version == version


_EMPTY = _Loaded(
    np.zeros(0, dtype=np.int64),
    np.zeros((0, 0), dtype=np.float32),
    np.zeros(0, dtype=np.int8),
    {},
    {},
    {},
)


def _load(store: IndexStore) -> _Loaded:
    """Every vector of ``store`` and the version they are at, in one read
    transaction (so the version names exactly what was read)."""
    by_source: dict[str, tuple[list[int], list[bytes]]] = {}
    hashes: dict[int, str] = {}
    with store.read_snapshot():
        version = store.meta_get("vectorsVersion")
        for cid, source, digest, blob in store.all_vectors():
            ids, blobs = by_source.setdefault(source, ([], []))
            ids.append(cid)
            blobs.append(blob)
            hashes[cid] = digest
    # Rows grouped by source: a search of one source scans a slice.
    sources = sorted(by_source)
    rows_of: dict[str, tuple[int, int]] = {}
    start = 0
    for source in sources:
        rows_of[source] = (start, start + len(by_source[source][0]))
        start += len(by_source[source][0])
    every = [cid for source in sources for cid in by_source[source][0]]
    blob = b"".join(b for source in sources for b in by_source[source][1])
    mat = (
        np.frombuffer(blob, dtype="<f4").reshape(len(every), -1)
        if every
        else np.zeros((0, 0), dtype=np.float32)
    )
    return _Loaded(
        np.asarray(every, dtype=np.int64),
        np.ascontiguousarray(mat, dtype=np.float32),
        np.repeat(
            np.arange(len(sources), dtype=np.int8),
            [len(by_source[source][0]) for source in sources],
        ),
        dict(enumerate(sources)),
        rows_of,
        hashes,
        str(store.file),
        version,
    )


class VectorMatrix:
    def __init__(self) -> None:
        self._refresh = Refresher("vector-matrix")
        self._loaded = _EMPTY
        self.reloads = 0  # background reloads that succeeded (tests)

    def __len__(self) -> int:
        return int(self._loaded.ids.shape[0])

    @property
    def version(self) -> str | None:
        return self._loaded.version

    @property
    def matrix(self) -> npt.NDArray[np.float32]:
        return self._loaded.mat

    def refresh(self, store: IndexStore, version: str | None = None) -> None:
        """Load now if the index's vectors changed since the last load (benchmarks,
        tests; searches use ``fresh_search``, which never waits)."""
        version = version or store.meta_get("vectorsVersion")
        if not self._loaded.of(store, version):
            self._loaded = _load(store)

    def fresh_search(
        self,
        store: IndexStore,
        version: str | None,
        query: npt.NDArray[np.float32],
        k: int,
        parts: Sequence[Sequence[str] | None] = (None,),
    ) -> list[tuple[int, float, str]] | None:
        """``search`` over the newest load, checked against ``store`` if it is older
        than ``version`` (and a reload started); None if there is no load of this
        index file to search (the caller asks sqlite-vec)."""
        cur = self._loaded
        if cur.of(store, version):
            return self.search(query, k, parts, cur)
        self._refresh.start(self._reload, store.file)
        if cur.file != str(store.file):
            return None
        found = self.search(query, k, parts, cur)
        now = store.chunk_hashes([cid for cid, _, _ in found])
        return [hit for hit in found if now.get(hit[0]) == cur.hashes.get(hit[0])]

    def _reload(self, file: Path) -> None:
        try:
            with Store(file, readonly=True) as store:
                self._loaded = _load(store)
            self.reloads += 1
        except STORE_ERRORS as exc:  # the file was replaced or removed: next search retries
            log.warning("loading the vectors of %s failed: %s", file, exc)

    def search(
        self,
        query: npt.NDArray[np.float32],
        k: int,
        parts: Sequence[Sequence[str] | None] = (None,),
        loaded: _Loaded | None = None,
    ) -> list[tuple[int, float, str]]:
        """Top-k (chunk id, cosine similarity, source) of each part (a list of
        sources, or None for all), from one pass over the matrix; vectors are unit
        length."""
        v = loaded or self._loaded
        if v.ids.shape[0] == 0 or v.mat.shape[1] != query.shape[-1]:
            return []
        sims = v.mat @ query.reshape(-1)
        out: list[tuple[int, float, str]] = []
        for sources in parts:
            rows: npt.NDArray[np.int64] | None = None
            first = 0
            if sources and set(sources) != set(v.rows_of):
                spans = [v.rows_of[s] for s in sources if s in v.rows_of]
                if not spans:
                    continue
                if len(spans) == 1:  # a slice: no copy, no masking pass
                    first, end = spans[0]
                    part = sims[first:end]
                else:
                    rows = np.concatenate([np.arange(a, b) for a, b in spans])
                    part = sims[rows]
            else:
                part = sims
            n = part.shape[0]
            kk = min(k, n)
            top = np.argpartition(part, n - kk)[n - kk :]
            top = top[np.argsort(-part[top])]
            at = first + top if rows is None else rows[top]
            out += [
                (cid, sim, v.names[code])
                for cid, sim, code in zip(
                    v.ids[at].tolist(), part[top].tolist(), v.src[at].tolist(), strict=True
                )
            ]
        return out


def knn_sqlite(
    store: IndexStore, query: npt.NDArray[np.float32], k: int, sources: Sequence[str] | None = None
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
