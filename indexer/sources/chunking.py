"""Markdown -> chunks with exact 1-based line spans. Pure: no I/O.

A chunk is a run of whole lines of about ``tokens`` tokens. Where a chunk may end
comes from the Markdown's block structure as markdown-it-py (CommonMark plus tables)
parses it (or ``markdown_blocks.scan``, alike, for simple files), through each block
token's line map: cuts prefer the line before a heading, then the start of a block
after a blank line, then a list item. A fenced or
indented code block, a table, a blockquote, an HTML block and a multi-line (setext)
heading are placed whole, at any container depth (a fence inside a list item or a
blockquote included), and split only when one alone is larger than a chunk; a
blockquote that big is split between its own blocks first, then by line. Consecutive
chunks share up to ``overlap`` tokens of whole lines. YAML front matter is plain
text, never a heading.

Size is measured as the sum of the lines' token counts plus one token per line break
(``measure``). That sum is an upper bound on the bytes-per-token fast path and is what
the guarantees below are stated in:

* every non-blank line is in at least one chunk;
* ``"\\n".join(lines[start-1:end]) == chunk.text`` for every chunk;
* no chunk measures above ``tokens`` unless it is one line;
* a block placed whole that measures at most ``tokens`` is never cut;
* the lines two consecutive chunks share measure at most ``overlap``.

A file that fits in one chunk is not parsed beyond its first block (the heading in
effect where the chunk starts): most memory files are that small. A file of more
than ``PARSE_MAX_LINES`` lines (a log dump, not notes) is not parsed at all: its
cuts prefer ATX headings outside fences and blocks after blank lines, and no block
is placed whole.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from indexer.sources.markdown_blocks import (
    WHOLE,
    Token,
    atx_headings,
    first_heading,
    heading_title,
    structure,
)
from indexer.sources.tokenizer import TokenCounter

__all__ = ["CHUNKER_VERSION", "PARSE_MAX_LINES", "Chunk", "chunk_markdown", "split_lines"]

# 2: cut points from markdown-it-py's block tokens; 3: curated files by entry, long
# transcript messages cut into pieces; 4: a curated heading with entries under it is
# in their heading path, not a chunk; 5: transcript chunks dated by their newest
# message; 6: a transcript chunk holds one day's messages; 7: a curated file's
# fenced code starts no entry or section (a change rebuilds indexes:
# pipeline.fingerprint; unchanged chunks keep their vectors from the cache)
CHUNKER_VERSION = 7

# Preference for cutting *before* a line, by what starts there.
_SCORE_HEADING = {1: 100, 2: 90, 3: 80, 4: 70, 5: 70, 6: 70}
_SCORE_BLOCK = 60  # a block placed whole (fence, table, blockquote, ...)
_SCORE_AFTER_BLANK = 50
_SCORE_LIST = 30
_SCORE_LINE = 1
# A file with more lines is not parsed as Markdown (see ``_units``).
PARSE_MAX_LINES = 50_000


@dataclass(frozen=True, slots=True)
class Chunk:
    """A chunk of a file: its line span, text, heading path and hash."""

    start_line: int  # 1-based, inclusive
    end_line: int  # 1-based, inclusive
    text: str
    heading: str  # heading path in effect at start_line, " > "-joined
    hash: str  # sha256 of text


@dataclass(slots=True)
class _Unit:
    """One line, or a block placed whole, that the chunker places as a piece."""

    first: int  # 0-based line index
    last: int  # 0-based, inclusive
    tokens: int
    score: int  # preference for cutting before this unit
    blank: bool


def split_lines(text: str) -> list[str]:
    """Split like an editor numbers lines: on ``\\n``, a trailing ``\\r`` dropped.

    Every part of memindex that talks about line numbers uses this function.
    """
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # a final newline does not start a new line
    return [ln[:-1] if ln.endswith("\r") else ln for ln in lines]


def _front_matter_end(lines: Sequence[str]) -> int:
    """Index of the closing '---' of YAML front matter, or -1."""
    if not lines or lines[0].strip() != "---":
        return -1
    for i in range(1, min(len(lines), 200)):
        if lines[i].strip() in ("---", "..."):
            return i
    return -1


def _units(
    lines: Sequence[str], counts: Sequence[int], limit: int, *, exact: bool = False
) -> tuple[list[_Unit], list[str | None]]:
    """Group lines into units and compute each line's heading path (None = unchanged)."""
    n = len(lines)
    heading_at: list[str | None] = [None] * n
    score = [_SCORE_LINE] * n
    fm_end = _front_matter_end(lines)
    prev_blank = True
    for i in range(fm_end + 1, n):
        blank = not lines[i].strip()
        if prev_blank and not blank:
            score[i] = _SCORE_AFTER_BLANK
        prev_blank = blank
    stack: list[str] = []

    def heading(a: int, level: int, title: str) -> None:
        del stack[level - 1 :]
        stack.extend([""] * (level - 1 - len(stack)))
        stack.append(title)
        heading_at[a] = " > ".join(s for s in stack if s)
        score[a] = _SCORE_HEADING[level]

    # Blocks placed whole, outermost first; a nested one is kept for when the
    # block holding it turns out larger than a chunk.
    whole: list[tuple[int, int]] = []
    if n - fm_end - 1 > PARSE_MAX_LINES and not exact:
        # markdown-it-py takes ~15 us a line: 8 MiB of one-character lines (4M) took
        # a minute. Past this many lines only ATX headings outside fences are read.
        for a, level, title in atx_headings(lines, fm_end + 1):
            heading(a, level, title)
        tokens: list[Token] = []
    else:
        tokens, items = structure(lines, fm_end + 1, exact=exact)
        for i in items:
            score[i] = max(score[i], _SCORE_LIST)
    for i, t in enumerate(tokens):
        if t.map is None:
            continue
        a, b = t.map
        if b <= a:
            continue
        if t.type == "heading_open":
            level, title = heading_title(tokens, i)
            if t.level == 0:
                heading(a, level, title)
            if b - a > 1:
                whole.append((a, b - 1))
        elif t.type in WHOLE:
            score[a] = max(score[a], _SCORE_BLOCK)
            whole.append((a, b - 1))

    chosen = _whole_units(whole, counts, score, limit)
    return _lay_out(lines, counts, score, chosen), heading_at


def _whole_units(
    whole: Sequence[tuple[int, int]], counts: Sequence[int], score: Sequence[int], limit: int
) -> list[_Unit]:
    """The blocks placed whole: the outermost that fit in a chunk, descending into
    one that does not. Token order lists an outer block before what it holds."""

    def size(a: int, b: int) -> int:
        return sum(counts[a : b + 1]) + (b - a + 1)

    chosen: list[_Unit] = []
    covered_end = -1  # lines up to here are inside a chosen block
    for a, b in whole:
        if a > covered_end and (measured := size(a, b)) <= limit + 1:
            chosen.append(_Unit(a, b, measured, score[a], False))
            covered_end = b
    return chosen


def _lay_out(
    lines: Sequence[str], counts: Sequence[int], score: Sequence[int], chosen: Sequence[_Unit]
) -> list[_Unit]:
    """Every line in order as a unit of its own, but for those in a ``chosen`` block."""
    units: list[_Unit] = []
    n = len(lines)
    i = 0
    k = 0
    while i < n:
        if k < len(chosen) and chosen[k].first == i:
            units.append(chosen[k])
            i = chosen[k].last + 1
            k += 1
            continue
        units.append(_Unit(i, i, counts[i] + 1, score[i], not lines[i].strip()))
        i += 1
    return units


def chunk_markdown(
    text: str,
    count: TokenCounter,
    *,
    tokens: int = 400,
    overlap: int = 80,
    exact: bool = False,
) -> list[Chunk]:
    """Split Markdown ``text`` into chunks; see the module docstring for guarantees.
    ``exact`` always parses lists (tests compare it with the shortcut)."""
    if tokens < 1:
        raise ValueError("tokens must be >= 1")
    if not 0 <= overlap < tokens:
        raise ValueError("overlap must be >= 0 and < tokens")
    lines = split_lines(text)
    if not lines:
        return []
    # A file that fits is one chunk. A token is at least one UTF-8 byte, so a file
    # of few bytes fits without counting.
    small = len(text.encode("utf-8")) + len(lines) <= tokens
    counts = [] if small else count(lines)
    if small or sum(counts) + len(lines) - 1 <= tokens:
        body = "\n".join(lines)
        if not body.strip():
            return []
        heading = "" if _front_matter_end(lines) >= 0 else first_heading(lines, 0)
        digest = hashlib.sha256(body.encode("utf-8")).hexdigest()
        return [Chunk(1, len(lines), body, heading, digest)]
    units, heading_at = _units(lines, counts, tokens, exact=exact)
    # Heading path in effect at each line.
    current: list[str] = [""] * len(lines)
    path = ""
    for idx in range(len(lines)):
        if heading_at[idx] is not None:
            path = heading_at[idx] or ""
        current[idx] = path
    spans = _plan(units, tokens, overlap)

    chunks: list[Chunk] = []
    for a, b in spans:
        first = units[a].first
        last = units[b - 1].last
        body = "\n".join(lines[first : last + 1])
        if not body.strip():
            continue
        chunks.append(
            Chunk(
                start_line=first + 1,
                end_line=last + 1,
                text=body,
                heading=current[first],
                hash=hashlib.sha256(body.encode("utf-8")).hexdigest(),
            )
        )
    return chunks


def _plan(units: Sequence[_Unit], limit: int, overlap: int) -> list[tuple[int, int]]:
    """Choose [a, b) unit spans. Unit token counts include one for the line break,
    so a span of units measures ``sum(tokens) - 1``."""
    spans: list[tuple[int, int]] = []
    n = len(units)
    start = 0
    while start < n:
        while start < n - 1 and units[start].blank:
            start += 1  # blank lines add nothing at the head of a chunk
        total = 0
        end = start
        while end < n and total + units[end].tokens <= limit + 1:
            total += units[end].tokens
            end += 1
        if end == start:  # one line alone is over the limit: it is its own chunk
            end = start + 1
            spans.append((start, end))
            start = end
            continue
        if end >= n:
            spans.append((start, n))
            break
        cut = _best_cut(units, start, end, limit)
        spans.append((start, cut))
        start = _next_start(units, start, cut, overlap, limit)
    return spans


def _best_cut(units: Sequence[_Unit], start: int, end: int, limit: int) -> int:
    """Pick where to end the chunk among the unit boundaries in (start, end].

    Each boundary is worth its structural score, discounted by how much of the
    chunk it would leave unused; boundaries that would leave the chunk under 30%
    full are not considered (unless nothing else is possible).
    """
    filled = sum(units[k].tokens for k in range(start, end))
    best = end
    best_value = -1.0
    before = 0
    min_fill = limit * 0.3
    for k in range(start, end):
        before += units[k].tokens
        boundary = k + 1
        if before < min_fill and boundary != end:
            continue
        score = units[boundary].score
        distance = (filled - before) / limit
        value = score * (1.0 - 0.7 * distance * distance)
        if value > best_value or (value == best_value and boundary > best):
            best_value = value
            best = boundary
    return best


def _next_start(units: Sequence[_Unit], start: int, cut: int, overlap: int, limit: int) -> int:
    """First unit of the next chunk: back off from ``cut`` by up to ``overlap`` tokens
    of whole units, keeping room for the unit at ``cut``."""
    if overlap == 0:
        return cut
    room = limit + 1 - units[cut].tokens
    j = cut
    carried = 0
    while j - 1 > start:
        t = units[j - 1].tokens
        if carried + t > overlap + 1 or carried + t > room:
            break
        carried += t
        j -= 1
    if all(units[k].blank for k in range(j, cut)):
        return cut  # an overlap of blank lines only is no overlap
    return j
