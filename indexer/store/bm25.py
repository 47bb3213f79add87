"""BM25 as memindex ranks it: FTS5's formula with an IDF that never reaches zero.

FTS5's built-in ``bm25()`` uses ``idf = log((N - n + 0.5) / (n + 0.5))``, floored at
1e-6: a term in half the chunks or more counts for nothing. In a workspace of two
or five files that is most terms, so every score was ~0 and results tied. memindex
uses Lucene's ``idf = log(1 + (N - n + 0.5) / (n + 0.5))`` instead: positive for
every ``n``, close to FTS5's for rare terms. Everything else is FTS5's: ``k1`` 1.2,
``b`` 0.75, a phrase's frequency in a row is the sum of the column weights of its
hits, the row length counts all columns, ``avgdl`` is over all rows.

``rank`` is registered on every connection of the store as the FTS5 auxiliary
function ``mi_bm25(chunks_fts, w_body, w_heading, w_path, w_source)``,
negative like ``bm25()`` (lower is better) so ``ORDER BY`` stays ascending;
keywords.py scores its in-memory postings with ``idf`` and the same constants.

A phrase's IDF needs the number of rows holding it, which FTS5 only tells by
visiting each of them (``query_phrase``: a Python call per row, ~2 ms for a common
word at 20k chunks).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import apsw

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["B", "K1", "SQL_FUNCTION", "idf", "register", "score", "score_rows"]

K1, B = 1.2, 0.75
SQL_FUNCTION = "mi_bm25"


def idf(rows: int, hits: int) -> float:
    """Lucene's BM25 IDF of a term held by ``hits`` of ``rows`` rows (always > 0)."""
    return math.log(1.0 + (rows - hits + 0.5) / (hits + 0.5))


def score(parts: Iterable[tuple[float, float]], dl: float, avgdl: float) -> float:
    """BM25 of a row of length ``dl`` from (IDF, weighted frequency) per phrase
    (phrases with no frequency add nothing); ``avgdl`` > 0. The one formula of both
    stores' keyword ranking."""
    norm = K1 * (1.0 - B + B * dl / avgdl)
    return sum(w * tf * (K1 + 1.0) / (tf + norm) for w, tf in parts if tf > 0.0)


def score_rows(
    parts: Iterable[tuple[float, npt.NDArray[np.float64]]],
    dl: npt.NDArray[np.float64],
    avgdl: float,
) -> npt.NDArray[np.float64]:
    """``score`` for many rows at once (row lengths ``dl``; per phrase its IDF and the
    rows' weighted frequencies): the same operations in the same order, so each
    row's score is bit for bit the one ``score`` gives."""
    import numpy as np

    norm = K1 * (1.0 - B + B * dl / avgdl)
    total = np.zeros(len(dl), dtype=np.float64)
    for w, tf in parts:
        with np.errstate(invalid="ignore", divide="ignore"):
            part = w * tf * (K1 + 1.0) / (tf + norm)
        total = total + np.where(tf > 0.0, part, 0.0)
    return total


def _count(_api: apsw.FTS5ExtensionApi, box: list[int]) -> None:
    box[0] += 1


def _idfs(api: apsw.FTS5ExtensionApi) -> list[float]:
    rows = api.row_count
    out = []
    for phrase in range(len(api.phrases)):
        box = [0]
        api.query_phrase(phrase, _count, box)
        out.append(idf(rows, box[0]))
    return out


def _rank(api: apsw.FTS5ExtensionApi, *args: float | None) -> float:
    state: tuple[list[float], float, tuple[float, ...]] | None = api.aux_data
    if state is None:
        rows = api.row_count
        avgdl = (api.column_total_size(-1) / rows) if rows else 1.0
        weights = tuple(float(a) for a in args if isinstance(a, int | float))
        state = (_idfs(api), avgdl or 1.0, weights)
        api.aux_data = state
    idfs, avgdl, w = state
    ncols = len(w)
    tfs = []
    for phrase in range(len(idfs)):
        tf = 0.0
        for col, offsets in enumerate(api.phrase_locations(phrase)):
            if offsets:
                tf += (w[col] if col < ncols else 1.0) * len(offsets)
        tfs.append(tf)
    return -score(zip(idfs, tfs, strict=True), api.column_size(-1), avgdl)


def register(db: Any) -> None:
    """Make ``mi_bm25`` available on an apsw connection."""
    db.register_fts5_function(SQL_FUNCTION, _rank)
