"""The newer of two notes that state the same fact differently comes first
(supersession; LongMemEval calls it knowledge update).

Two shown results state the same fact when the lines their snippets are centred on
share most of their words (at least ``SHARED`` of the shorter line's, and at least
``MIN_WORDS`` words) and what the shorter line says beyond the longer one is values
(words with a digit), stop words and words that mark a change ("now", "moved"), one
value at least: "the ferry ticket code is FERRY-1 for the trip" and "... is FERRY-9
now". "Team offsite: booked the venue" and "Team offsite planning: venue shortlist"
are two events, not one fact. When both are dated (daily logs, by their file names)
and the older ranks above the newer, the newer is moved just above it; nothing else
moves, so an old note that alone answers a question is never pushed down. With
``explain``, the older result names the newer in ``explain.supersededBy``.

This is not a decay: undated notes, and dated ones that state other facts, keep
their places whatever their age.
"""

from __future__ import annotations

import re
from datetime import date

from indexer.api import SearchResult
from indexer.search.query import STOP_WORDS

__all__ = ["supersede"]

SHARED = 0.6
MIN_WORDS = 3
_WORD = re.compile(r"\w+")
_CHANGE = frozenset(
    ("now", "new", "newly", "currently", "current", "changed", "updated", "moved")
    + ("instead", "anymore", "since", "today", "switched", "starting")
)


def _words(line: str) -> set[str]:
    return {w for w in _WORD.findall(line.lower()) if len(w) > 1 or w.isdigit()}


def _value(word: str) -> bool:
    return any(c.isdigit() for c in word)


def _same_fact(a: set[str], b: set[str]) -> bool:
    if a == b:
        return False
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    shared = len(a & b)
    if shared < MIN_WORDS or shared < SHARED * len(short):
        return False
    extra = short - long
    if not all(_value(w) or w in STOP_WORDS or w in _CHANGE for w in extra):
        return False
    return any(_value(w) for w in extra | (long - short))


def supersede(
    results: list[SearchResult],
    lines: list[str],
    dates: list[date | None],
    *,
    explain: bool = False,
) -> list[SearchResult]:
    """``results`` with a newer restatement moved above the older one; ``lines[i]``
    is result i's best line, ``dates[i]`` its date (None: undated)."""
    order = list(range(len(results)))
    words = [_words(x) for x in lines]
    for j in range(len(results)):
        dj = dates[j]
        if dj is None:
            continue
        pos_j = order.index(j)
        for pos_i in range(pos_j):
            i = order[pos_i]
            di = dates[i]
            if di is None or di >= dj or not _same_fact(words[i], words[j]):
                continue
            order.pop(pos_j)
            order.insert(pos_i, j)
            if explain:
                results[i].setdefault("explain", {})["supersededBy"] = results[j]["citation"]
            break
    return [results[k] for k in order]
