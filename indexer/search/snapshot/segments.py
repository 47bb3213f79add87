"""Rows of an in-memory snapshot segment (keywords.py, vectors.py): chunk ids grouped
by source, which rows are still live, and how segments are merged.

A snapshot is a list of immutable segments, oldest first: one read in full, then
one per batch of changes. A chunk deleted (or replaced) since is marked dead in a
copy of its segment's ``alive`` mask; nothing else is copied. After each batch the
newest segments are merged while the one before is less than twice the size of
the last (a binary counter: about log2(n) segments, every row merged about log2(n)
times), which also drops their dead rows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

import numpy as np
import numpy.typing as npt

__all__ = [
    "MAX_SEGMENTS",
    "Rows",
    "find_rows",
    "group_rows",
    "kill_rows",
    "merged_rows",
    "settle",
    "with_codes",
]

MAX_SEGMENTS = 12


@dataclass(frozen=True)
class Rows:
    ids: npt.NDArray[np.int64]  # chunk ids: grouped by source code, ascending within one
    src: npt.NDArray[np.int8]  # source code per row
    spans: dict[int, tuple[int, int]]  # source code -> its rows [start, end)
    alive: npt.NDArray[np.bool_]
    dead: int  # rows not alive

    @property
    def live(self) -> int:
        return int(self.ids.shape[0]) - self.dead


S = TypeVar("S", bound=Rows)


def group_rows(
    ids: npt.NDArray[np.int64], src: npt.NDArray[np.int8]
) -> tuple[npt.NDArray[np.int64], dict[int, tuple[int, int]]]:
    """The order that groups rows by source (ascending ids within one) and the span
    of each source in it."""
    order = np.lexsort((ids, src))
    by = src[order]
    spans = {
        int(code): (int(np.searchsorted(by, code)), int(np.searchsorted(by, code, "right")))
        for code in np.unique(by)
    }
    return order, spans


def merged_rows(
    a: Rows, b: Rows
) -> tuple[
    npt.NDArray[np.int64], npt.NDArray[np.int8], npt.NDArray[np.int64], dict[int, tuple[int, int]]
]:
    """The rows of merging ``a`` and ``b``: the live rows of ``a`` then ``b``, put in
    ``group_rows`` order. Returns their ids and sources in that order, the order
    itself (over the concatenated live rows, for the segment's other arrays) and
    each source's span."""
    ids = np.concatenate([a.ids[a.alive], b.ids[b.alive]])
    src = np.concatenate([a.src[a.alive], b.src[b.alive]])
    order, spans = group_rows(ids, src)
    return ids[order], src[order], order, spans


def find_rows(seg: Rows, ids: Sequence[int] | npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """The rows of ``seg`` holding any of ``ids`` (live or not)."""
    want = np.asarray(ids, dtype=np.int64)
    if want.shape[0] == 0 or seg.ids.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    found = []
    for start, end in seg.spans.values():
        part = seg.ids[start:end]
        at = np.searchsorted(part, want)
        ok = at < part.shape[0]
        at = at[ok]
        at = at[part[at] == want[ok]]
        found.append(at + start)
    return np.concatenate(found) if found else np.zeros(0, dtype=np.int64)


def kill_rows(seg: S, ids: Sequence[int]) -> tuple[S, npt.NDArray[np.int64]] | None:
    """``seg`` with the live rows of ``ids`` marked dead, and those rows; None if it
    holds none of them."""
    rows = find_rows(seg, ids)
    rows = rows[seg.alive[rows]]
    if rows.shape[0] == 0:
        return None
    alive = seg.alive.copy()
    alive[rows] = False
    return replace(seg, alive=alive, dead=seg.dead + int(rows.shape[0])), rows


def with_codes(codes: dict[str, int], sources: Iterable[str]) -> dict[str, int]:
    """``codes`` (source -> code) with a code for each of ``sources``: a new dict if
    any is new (older snapshots keep reading the one they share), else ``codes``."""
    sources = list(sources)
    if all(s in codes for s in sources):
        return codes
    out = dict(codes)
    for s in sources:
        out.setdefault(s, len(out))
    return out


def settle(segments: list[S], merge: Callable[[S, S], S]) -> list[S]:
    """Merge the newest segments while the one before the last is under twice its
    live size (or there are more than ``MAX_SEGMENTS``)."""
    segs = list(segments)
    while len(segs) >= 2:
        a, b = segs[-2], segs[-1]
        if a.live > 2 * b.live and len(segs) <= MAX_SEGMENTS:
            break
        segs[-2:] = [merge(a, b)]
    return segs
