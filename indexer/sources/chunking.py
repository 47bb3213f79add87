"""Markdown -> chunks with exact 1-based line spans. Pure: no I/O.

A chunk is a run of whole lines of about ``tokens`` tokens. Cuts prefer Markdown
structure (before a heading, after a blank line, before a list item or a fence) and a
fenced code block is never split unless it alone is larger than a chunk. Consecutive
chunks share up to ``overlap`` tokens of whole lines.

Size is measured as the sum of the lines' token counts plus one token per line break
(``measure``). That sum is an upper bound on the bytes-per-token fast path and is what
the guarantees below are stated in:

* every non-blank line is in at least one chunk;
* ``"\\n".join(lines[start-1:end]) == chunk.text`` for every chunk;
* no chunk measures above ``tokens`` unless it is one line or one fence;
* the lines two consecutive chunks share measure at most ``overlap``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from indexer.sources.tokenizer import TokenCounter

__all__ = ["CHUNKER_VERSION", "Chunk", "chunk_markdown", "split_lines"]

CHUNKER_VERSION = 1

_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t#]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_LIST_ITEM = re.compile(r"^\s{0,12}(?:[-*+]|\d{1,9}[.)])(?:\s|$)")

# Preference for cutting *before* a unit, by what the unit is / follows.
_SCORE_HEADING = {1: 100, 2: 90, 3: 80, 4: 70, 5: 70, 6: 70}
_SCORE_FENCE = 60
_SCORE_AFTER_BLANK = 50
_SCORE_LIST = 30
_SCORE_LINE = 1


@dataclass(frozen=True, slots=True)
class Chunk:
    start_line: int  # 1-based, inclusive
    end_line: int  # 1-based, inclusive
    text: str
    heading: str  # heading path in effect at start_line, " > "-joined
    hash: str  # sha256 of text


@dataclass(slots=True)
class _Unit:
    """One line, or a whole fenced block, that the chunker places as a piece."""

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


def _units(lines: Sequence[str], counts: Sequence[int]) -> tuple[list[_Unit], list[str | None]]:
    """Group lines into units and compute each line's heading path (None = unchanged)."""
    units: list[_Unit] = []
    heading_at: list[str | None] = [None] * len(lines)
    stack: list[str] = []
    fm_end = _front_matter_end(lines)
    i = 0
    prev_blank = True
    n = len(lines)
    while i < n:
        line = lines[i]
        if i <= fm_end:
            units.append(_Unit(i, i, counts[i] + 1, _SCORE_LINE, not line.strip()))
            i += 1
            prev_blank = False
            continue
        fence = _FENCE.match(line)
        if fence:
            marker = fence.group(1)
            j = i + 1
            while j < n:
                close = _FENCE.match(lines[j])
                if (
                    close
                    and close.group(1)[0] == marker[0]
                    and len(close.group(1)) >= len(marker)
                    and not lines[j].strip()[len(close.group(1)) :].strip()
                ):
                    break
                j += 1
            last = min(j, n - 1)  # an unclosed fence runs to the end of the file
            tokens = sum(counts[i : last + 1]) + (last - i + 1)
            units.append(_Unit(i, last, tokens, _SCORE_FENCE, False))
            i = last + 1
            prev_blank = False
            continue
        blank = not line.strip()
        score = _SCORE_AFTER_BLANK if prev_blank else _SCORE_LINE
        heading = _HEADING.match(line)
        if heading:
            level = len(heading.group(1))
            title = (heading.group(2) or "").strip()
            del stack[level - 1 :]
            stack.extend([""] * (level - 1 - len(stack)))
            stack.append(title)
            heading_at[i] = " > ".join(s for s in stack if s)
            score = _SCORE_HEADING[level]
        elif _LIST_ITEM.match(line):
            score = max(score, _SCORE_LIST)
        units.append(_Unit(i, i, counts[i] + 1, score, blank))
        prev_blank = blank
        i += 1
    return units, heading_at


def chunk_markdown(
    text: str,
    count: TokenCounter,
    *,
    tokens: int = 400,
    overlap: int = 80,
) -> list[Chunk]:
    """Split Markdown ``text`` into chunks; see the module docstring for guarantees."""
    if tokens < 1:
        raise ValueError("tokens must be >= 1")
    if not 0 <= overlap < tokens:
        raise ValueError("overlap must be >= 0 and < tokens")
    lines = split_lines(text)
    if not lines:
        return []
    # Fast path: a token is at least one UTF-8 byte, so a small file is one chunk.
    if len(text.encode("utf-8")) + len(lines) <= tokens:
        counts = [0] * len(lines)
        fast = True
    else:
        counts = count(lines)
        fast = False
    units, heading_at = _units(lines, counts)
    # Heading path in effect at each line.
    current: list[str] = [""] * len(lines)
    path = ""
    for idx in range(len(lines)):
        if heading_at[idx] is not None:
            path = heading_at[idx] or ""
        current[idx] = path

    if fast:
        spans = [(0, len(units))]
    else:
        units = _explode_big_fences(units, counts, tokens)
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


def _explode_big_fences(units: list[_Unit], counts: Sequence[int], limit: int) -> list[_Unit]:
    """A fence larger than a chunk is the one thing that may be split: by line."""
    out: list[_Unit] = []
    for u in units:
        if u.last > u.first and u.tokens > limit + 1:
            for i in range(u.first, u.last + 1):
                score = _SCORE_FENCE if i == u.first else _SCORE_LINE
                out.append(_Unit(i, i, counts[i] + 1, score, False))
        else:
            out.append(u)
    return out


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
