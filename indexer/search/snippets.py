"""Snippets: the line of a chunk that best matches a query, and the lines around it
that fit ``query.maxSnippetChars`` (``make_snippet``); ``has_word_with_prefix``, the
word-start test snippets, candidates' classification and ranking share.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Sequence

from indexer.search.query.parse import ParsedQuery

__all__ = ["has_word_with_prefix", "make_snippet"]

_TIE = 1e-9  # line weights this close are equal (sums of logs in another order)


def has_word_with_prefix(text: str, prefix: str) -> bool:
    """True if a word of ``text`` starts with ``prefix`` (both lower-case)."""
    pos = text.find(prefix)
    while pos >= 0:
        if pos == 0 or not text[pos - 1].isalnum():
            return True
        pos = text.find(prefix, pos + 1)
    return False


def _best_line(low: str, needles: Sequence[str], stems: Sequence[str], cjk: Sequence[str]) -> int:
    """Index of the line of ``low`` (lower-cased text) holding the most of what a
    query looks for, the first of equals; -1 if no line holds any. A needle counts
    twice; a stem counts where a word starts with it; each item counts
    ``log(1 + lines / lines holding it)`` times that: a word on every line (the
    speaker's name in a conversation, the project in a log) says little about which
    line answers (docs/lab/retrieval-log.md, "What the agent reads: snippets").

    Each item is found in the whole text and its hits are mapped to lines, rather
    than every line being lower-cased and searched for every item."""
    if not (needles or stems or cjk):
        return -1
    starts = [0]
    pos = low.find("\n")
    while pos >= 0:
        starts.append(pos + 1)
        pos = low.find("\n", pos + 1)
    found: dict[int, float] = {}
    for items, weight, word_start in ((needles, 2, False), (stems, 1, True), (cjk, 1, False)):
        for item in items:
            holding: set[int] = set()
            pos = low.find(item)
            while pos >= 0:
                if not word_start or pos == 0 or not low[pos - 1].isalnum():
                    holding.add(bisect_right(starts, pos) - 1)
                pos = low.find(item, pos + 1)
            if holding:
                w = weight * math.log(1.0 + len(starts) / len(holding))
                for line in holding:
                    found[line] = found.get(line, 0.0) + w
    if not found:
        return -1
    top = max(found.values()) - _TIE
    return min(line for line, hits in found.items() if hits >= top)


def make_snippet(
    text: str, start_line: int, q: ParsedQuery, max_chars: int
) -> tuple[str, int, int, int]:
    """A snippet of at most ``max_chars`` around the best-matching line, mostly the
    lines after it.

    Returns (snippet, first line, last line, best line), absolute and 1-based."""
    lines = text.split("\n")
    best = _best_line(text.lower(), q.needles, q.stems, q.cjk)
    if best < 0:
        best = next((i for i, ln in enumerate(lines) if ln.strip()), 0)
    line = lines[best]
    if len(line) >= max_chars:
        low = line.lower()
        pos = 0
        for needle in [*q.needles, *q.words, *q.cjk]:
            found = low.find(needle)
            if found >= 0:
                pos = found
                break
        begin = max(0, min(pos - max_chars // 3, len(line) - max_chars))
        piece = line[begin : begin + max_chars]
        if begin > 0:
            piece = "…" + piece[1:]
        if begin + max_chars < len(line):
            piece = piece[:-1] + "…"
        return piece, start_line + best, start_line + best, start_line + best
    # Grown two lines down for each line up: what answers a matched line follows it
    # (the reply to a question, the text under a heading; docs/RETRIEVAL.md).
    lo = hi = best
    size = len(line)
    step = 0
    while True:
        can_up = lo > 0 and size + len(lines[lo - 1]) + 1 <= max_chars
        can_down = hi < len(lines) - 1 and size + len(lines[hi + 1]) + 1 <= max_chars
        if not (can_up or can_down):
            break
        if (step % 3 == 2 and can_up) or not can_down:
            lo -= 1
            size += len(lines[lo]) + 1
        else:
            hi += 1
            size += len(lines[hi]) + 1
        step += 1
    while lo < best and not lines[lo].strip():  # no blank line at either end
        lo += 1
    while hi > best and not lines[hi].strip():
        hi -= 1
    return "\n".join(lines[lo : hi + 1]), start_line + lo, start_line + hi, start_line + best
