"""The block structure of a Markdown file as the chunker reads it: markdown-it-py
(CommonMark plus tables, block rules only) over whole lines, each block token's
``map`` in the file's line indexes; the lines where list items start, from a parse
with lists off when that is safe (``structure``); headings.

markdown-it-py is imported on the first parse (a file larger than one line)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token

__all__ = [
    "WHOLE",
    "atx_headings",
    "first_heading",
    "heading_title",
    "parse_blocks",
    "structure",
]

# Blocks placed whole unless larger than a chunk.
WHOLE = frozenset({"fence", "code_block", "table_open", "html_block", "blockquote_open"})
# CommonMark has no depth limit; past this many containers markdown-it-py reads the
# rest as text (a hostile file of 100,000 '>' cannot recurse without bound).
_MAX_NESTING = 40

_MD: dict[bool, MarkdownIt] = {}
# A list item's marker (CommonMark: a bullet, or up to 9 digits and "." or ")", then
# a space or the end of the line), and what opens a block after one.
_LIST_MARKER = re.compile(r"[ \t]*(?:[-*+]|\d{1,9}[.)])(?:[ \t]+|$)")
_OPENERS = ("```", "~~~", ">", "|", "<", "#")
_OPENING = frozenset({"heading_open", "fence", "blockquote_open", "table_open", "html_block"})
_QUOTES = re.compile(r"(?: {0,3}> ?)+")


def _parser(lists: bool) -> MarkdownIt:
    """CommonMark plus tables, block structure only: the chunker needs where blocks
    start and end, not what their text means, so inline parsing is off (it is half
    the parse time). ``lists=False`` leaves lists out as well (see ``structure``).
    Built once each; parsing does not change them."""
    md = _MD.get(lists)
    if md is None:
        from markdown_it import MarkdownIt

        md = MarkdownIt("commonmark", {"maxNesting": _MAX_NESTING}).enable("table")
        if not lists:
            md.disable("list")
        md.core.ruler.enableOnly(["normalize", "block"])
        _MD[lists] = md
    return md


def parse_blocks(lines: Sequence[str], first: int, end: int, *, lists: bool = True) -> list[Token]:
    """Block tokens of ``lines[first:end]``, each ``map`` in the file's line indexes.

    A carriage return inside a line is a line break to a CommonMark parser but not to
    ``split_lines``; it is handed over as a space so both count the same lines."""
    body = "\n".join(lines[first:end])
    if "\r" in body:
        body = body.replace("\r", " ")
    tokens = _parser(lists).parse(body)
    if first:
        for t in tokens:
            if t.map is not None:
                t.map = [t.map[0] + first, t.map[1] + first]
    return tokens


def list_items(tokens: Sequence[Token], lines: Sequence[str]) -> set[int] | None:
    """Lines where a list item starts, read from a parse with lists off; None when
    that parse may differ from the full one (see ``structure``)."""
    items: set[int] = set()
    list_end = -1  # where the last paragraph holding list lines ends
    after_quotes: dict[int, str] = {}  # a line's first character past its ">" markers
    for t in tokens:
        if t.map is None:
            continue
        if t.map[0] == list_end and t.type in _OPENING:
            return None  # it cuts into a list's last item: CommonMark may disagree
        at = t.map[0]
        first = lines[at]
        if t.type in _OPENING and at not in after_quotes:  # once a line: nested quotes
            after_quotes[at] = _QUOTES.sub("", first, 1)[:1]  # open many blocks on one
        if t.type == "code_block" or (
            t.type in _OPENING and (first[:1] in (" ", "\t") or after_quotes[at] in (" ", "\t"))
        ):
            return None  # an indented block: it may sit inside a list item
        if t.type == "table_open":
            if any(_LIST_MARKER.match(lines[i].lstrip(" \t>")) for i in range(*t.map)):
                return None  # a list line ends a table in CommonMark, not without lists
            continue
        if t.type not in ("paragraph_open", "heading_open"):
            continue
        for i in range(*t.map):
            rest = lines[i].lstrip(" \t>")
            m = _LIST_MARKER.match(rest)
            if m is None:
                continue
            if t.type == "heading_open" or t.level > 0:
                return None  # a list line as a setext heading's text, or in a quote
            items.add(i)
            list_end = t.map[1]
            while m is not None:
                rest = rest[m.end() :]
                m = _LIST_MARKER.match(rest)
            if rest.startswith(_OPENERS):
                return None  # a block inside a list item
    return items


def structure(
    lines: Sequence[str], first: int, *, exact: bool = False
) -> tuple[list[Token], set[int]]:
    """Block tokens of ``lines[first:]`` and the lines where a list item starts.

    Lists are most of the parse time (each item is parsed as a document of its own:
    2-3x the rest for a daily log of bullets), and the chunker needs only where their
    items start, unless an item holds a block of its own. So the file is first parsed
    with lists off, where list lines read as paragraph text. That parse is kept when
    every block other than a paragraph starts unindented (a fence, quote, table, HTML
    block or heading indented under a list item is part of it; an indented code block
    may be the item's own paragraph), no paragraph line opens a block past its list
    markers (``- > quote``) and no list line is a setext heading's text or inside a
    quote (where it may only be lazily continuing the quote's paragraph): then it has
    the same blocks as the full parse (tests/sources/test_chunking.py compares them), and an
    item starts at each paragraph line that begins with a list marker (a few more
    than CommonMark's: ``2.`` after a paragraph line, or a marker four spaces in past
    it, is text there; this only moves a cut preference). Otherwise (or
    with ``exact``) the file is parsed again with lists on."""
    if not exact:
        tokens = parse_blocks(lines, first, len(lines), lists=False)
        items = list_items(tokens, lines)
        if items is not None:
            return tokens, items
    tokens = parse_blocks(lines, first, len(lines))
    return tokens, {t.map[0] for t in tokens if t.type == "list_item_open" and t.map}


def heading_title(tokens: Sequence[Token], i: int) -> tuple[int, str]:
    """(level, title) of the heading that opens at ``tokens[i]``."""
    title = tokens[i + 1].content if i + 1 < len(tokens) else ""
    return int(tokens[i].tag[1]), " ".join(title.split())


_ATX = re.compile(r" {0,3}(#{1,6})(?:[ \t]+|$)(.*)$")
_ATX_CLOSE = re.compile(r"(?:^|[ \t]+)#+[ \t]*$")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")


def atx_headings(lines: Sequence[str], first: int) -> list[tuple[int, int, str]]:
    """(line, level, title) of every ``#`` heading in ``lines[first:]`` outside a
    fenced block, without a parser: for files too long to parse. Setext headings and
    containers are not read."""
    out: list[tuple[int, int, str]] = []
    fence = ""
    for i in range(first, len(lines)):
        line = lines[i]
        f = _FENCE.match(line)
        if fence:
            closes = f and f.group(1)[0] == fence[0] and len(f.group(1)) >= len(fence)
            if closes and f and not line[f.end() :].strip():
                fence = ""
            continue
        if f and not (f.group(1)[0] == "`" and "`" in line[f.end() :]):
            fence = f.group(1)
            continue
        m = _ATX.match(line)
        if m:
            title = _ATX_CLOSE.sub("", m.group(2))
            out.append((i, len(m.group(1)), " ".join(title.split())))
    return out


def first_heading(lines: Sequence[str], start: int) -> str:
    """The heading path at ``lines[start]`` when no line above it is a heading: its
    own title if it starts a heading, else "". Parses only the block starting there."""
    end = start
    while end < len(lines) and lines[end].strip():
        end += 1
    tokens = parse_blocks(lines, start, end)
    if tokens and tokens[0].type == "heading_open":
        return heading_title(tokens, 0)[1]
    return ""
