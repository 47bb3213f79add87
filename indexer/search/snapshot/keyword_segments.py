"""The keyword postings of one segment (``KeywordSegment``), built from token
occurrences and merged two into one, all in numpy. ``keywords.KeywordPart`` keeps a
snapshot's segments and scores queries over them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from indexer.search.snapshot.segments import Rows, group_rows, merged_rows

__all__ = ["KeywordSegment", "Occurrences", "build_segment", "csr", "merge_segments"]


@dataclass(frozen=True)
class KeywordSegment(Rows):
    """Rows (``segments.Rows``) with their postings, compressed-row style: term
    ``t``'s rows are ``rows[indptr[t]:indptr[t + 1]]`` (ascending) and ``freq``
    their column-weighted frequencies (> 0). ``zero``: rows holding a term only in
    a weight-0 column (the source name), which FTS5 counts in the term's IDF."""

    dl: npt.NDArray[np.float64]  # tokens in all columns, per row
    terms: dict[str, int]
    indptr: npt.NDArray[np.int64]
    rows: npt.NDArray[np.int32]
    freq: npt.NDArray[np.float64]
    zero: dict[str, npt.NDArray[np.int32]]

    def posting(self, term: str) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.float64]] | None:
        t = self.terms.get(term)
        if t is None:
            return None
        a, b = int(self.indptr[t]), int(self.indptr[t + 1])
        return self.rows[a:b], self.freq[a:b]


def csr(
    n_terms: int,
    term_of: npt.NDArray[np.int64],
    rows: npt.NDArray[np.int64],
    freq: npt.NDArray[np.float64],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int32], npt.NDArray[np.float64]]:
    """(indptr, rows, freq) from unordered (term, row, freq) entries, one per pair."""
    order = np.lexsort((rows, term_of))
    return indptr_of(term_of, n_terms), rows[order].astype(np.int32), freq[order]


def indptr_of(term_of: npt.NDArray[np.int64], n_terms: int) -> npt.NDArray[np.int64]:
    """Where each term's entries start in term order (one past the last at the end)."""
    indptr = np.zeros(n_terms + 1, dtype=np.int64)
    np.cumsum(np.bincount(term_of, minlength=n_terms), out=indptr[1:])
    return indptr


Occurrences = tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float64]]


def build_segment(
    ids: npt.NDArray[np.int64],
    src: npt.NDArray[np.int8],
    terms: dict[str, int],
    batches: Iterable[Occurrences],
) -> KeywordSegment:
    """A segment from rows in any order and their token occurrences: batches of
    (term index, row, column weight) arrays, one entry per occurrence (of every
    column: a row's length is its number of entries), each batch's terms above the
    previous batch's (so the postings come out in term order)."""
    order, spans = group_rows(ids, src)
    n = max(1, order.shape[0])
    pos = np.empty(order.shape[0], dtype=np.int64)
    pos[order] = np.arange(order.shape[0])
    zero: dict[str, npt.NDArray[np.int32]] = {}
    term_of, rows, freq = [], [], []
    dl = np.zeros(order.shape[0], dtype=np.float64)
    for t, r, w in batches:
        dl += np.bincount(r, minlength=order.shape[0])
        uniq, inv = np.unique(t * n + pos[r], return_inverse=True)
        f = np.bincount(inv, weights=w, minlength=uniq.shape[0]).astype(np.float64)
        tt, rr = np.divmod(uniq, n)
        only = f == 0  # held only in weight-0 columns: counted in the IDF, never scored
        if only.any():  # rare: the source names
            names = {t: name for name, t in terms.items()}  # (``terms`` grows as we go)
            for term in np.unique(tt[only]).tolist():
                zero[names[term]] = rr[only & (tt == term)].astype(np.int32)
        term_of.append(tt[~only])
        rows.append(rr[~only].astype(np.int32))
        freq.append(f[~only])
    cat = np.concatenate
    indptr = indptr_of(cat(term_of) if term_of else np.zeros(0, np.int64), len(terms))
    return KeywordSegment(
        ids[order],
        src[order],
        spans,
        np.ones(order.shape[0], dtype=bool),
        0,
        dl[order],
        terms,
        indptr,
        cat(rows) if rows else np.zeros(0, np.int32),
        cat(freq) if freq else np.zeros(0, np.float64),
        zero,
    )


def merge_segments(a: KeywordSegment, b: KeywordSegment) -> KeywordSegment:
    """One segment holding the live rows of ``a`` then ``b`` (all numpy but the
    union of the two vocabularies)."""
    ids, src, order, spans = merged_rows(a, b)
    dl = np.concatenate([a.dl[a.alive], b.dl[b.alive]])[order]
    inv = np.empty(order.shape[0], dtype=np.int64)
    inv[order] = np.arange(order.shape[0])
    na = int(a.alive.sum())
    new_a = np.full(a.ids.shape[0], -1, dtype=np.int64)
    new_a[a.alive] = inv[:na]
    new_b = np.full(b.ids.shape[0], -1, dtype=np.int64)
    new_b[b.alive] = inv[na:]
    terms = dict(a.terms)
    b_term = np.fromiter(
        (terms.setdefault(t, len(terms)) for t in b.terms), dtype=np.int64, count=len(b.terms)
    )
    term_of = np.concatenate(
        [
            np.repeat(np.arange(len(a.terms), dtype=np.int64), np.diff(a.indptr)),
            np.repeat(b_term, np.diff(b.indptr)),
        ]
    )
    rows = np.concatenate([new_a[a.rows], new_b[b.rows]])
    freq = np.concatenate([a.freq, b.freq])
    keep = rows >= 0
    indptr, crow, cfreq = csr(len(terms), term_of[keep], rows[keep], freq[keep])
    zero: dict[str, npt.NDArray[np.int32]] = {}
    for seg, new in ((a, new_a), (b, new_b)):
        for term, r in seg.zero.items():
            moved = new[r]
            zero[term] = np.concatenate([zero.get(term, np.zeros(0, np.int32)), moved[moved >= 0]])
    zero = {t: np.sort(r).astype(np.int32) for t, r in zero.items() if r.shape[0]}
    return KeywordSegment(
        ids, src, spans, np.ones(ids.shape[0], dtype=bool), 0, dl,
        terms, indptr, crow, cfreq, zero,
    )  # fmt: skip
