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

A dated note that announces a change ("Pepper has a new vet: Dr. Osei", "New goal
pace for the half: 5:35/km (was 5:45)", "she switched carriers and has a new
number") ranks above the curated entry (MEMORY.md, USER.md) that states the old
value, though their lines differ: its best line holds a word of change
(``ANNOUNCED``) and every word of the question the entry's best line holds, or a
value of it (the old number). A curated entry is undated, and what it says is
curated from the logs, so a later log that says something new about the same
thing is the newer statement. (Between two logs only a restatement counts: in a
conversation, "my new dance studio" is no change of the studio named before.) Such a
note is looked for past the shown results too, among the candidates (see
``results.REACH``): a daily log whose best line announces a change of a shown
entry, with at least ``REACHED_WORDS`` of the entry's question words, takes the
last place and moves above the entry ("Elin's swimming moves from Tuesdays 17:00 to
Thursdays 16:30" for "which day is Elin's swimming lesson?", ranked 9th).

This is not a decay: undated notes, and dated ones that state other facts, keep
their places whatever their age.
"""

from __future__ import annotations

import re
from datetime import date

from indexer.api import SearchResult
from indexer.search.query import STOP_WORDS
from indexer.sources.curated import is_curated_root

__all__ = ["ANNOUNCED", "announces", "is_curated_result", "supersede"]

SHARED = 0.6
MIN_WORDS = 3
# A note ranked below the shown results announces a change of a shown curated entry
# only when it holds at least this many of the question's words the entry holds (a
# name alone, "Sam", is no subject).
REACHED_WORDS = 2
_WORD = re.compile(r"\w+")
_CHANGE = frozenset(
    ("now", "new", "newly", "currently", "current", "changed", "updated", "moved")
    + ("instead", "anymore", "since", "today", "switched", "starting")
)


# Words with which a note announces that something changed.
ANNOUNCED = frozenset(
    ("new", "newly", "now", "switched", "changed", "moved", "instead", "anymore")
    + ("replaced", "updated", "switch", "switching", "moves", "moving", "rescheduled")
    + ("renegotiated", "raised", "increased", "reduced", "lowered")
    + ("decided", "agreed", "settled")  # a decision recorded after the entry
)


def _announces(line: set[str], other: set[str], asked: frozenset[str]) -> bool:
    """``line`` announces a change of what ``other`` states: it holds a word of
    change and every word of the question ``other`` holds (one at least), or a value
    of ``other`` (a word of 3 characters or more with a digit: the old number)."""
    if not line & ANNOUNCED:
        return False
    theirs = other & asked
    if theirs and theirs <= line:
        return True
    return any(_value(w) and len(w) >= 3 for w in line & other)


def announces(line: str, entry: str, asked: frozenset[str]) -> bool:
    """``line`` (a dated note's, ranked below the shown results) announces a change
    of what the curated ``entry`` line states, about the question of the words
    ``asked``: a word of change, and at least ``REACHED_WORDS`` of the question's
    words, every one the entry holds. (Not by a shared value alone: "a bigger unit,
    at 950/month instead of 620" is about the entry's rent, not about a question
    that found the entry by a name.)"""
    words, theirs = _words(line), _words(entry) & asked
    return bool(words & ANNOUNCED) and len(theirs) >= REACHED_WORDS and theirs <= words


def is_curated_result(r: SearchResult) -> bool:
    return r["source"] == "memory" and is_curated_root(r["path"])


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
    asked: frozenset[str] | None = None,
    explain: bool = False,
) -> list[SearchResult]:
    """``results`` with a newer restatement moved above the older one; ``lines[i]``
    is result i's best line, ``dates[i]`` its date (None: undated); ``asked``: the
    question's words (no stop words), None: no announced change is looked for."""
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
            if di is not None:  # an older log restating the fact
                if di >= dj or not _same_fact(words[i], words[j]):
                    continue
            elif (  # undated: only a curated entry is known to be older
                asked is None
                or not is_curated_result(results[i])
                or not _announces(words[j], words[i], asked)
            ):
                continue
            order.pop(pos_j)
            order.insert(pos_i, j)
            if explain:
                results[i].setdefault("explain", {})["supersededBy"] = results[j]["citation"]
            break
    return [results[k] for k in order]
