"""The block structure of a Markdown file as the chunker reads it: markdown-it-py
(CommonMark plus tables, block rules only) over whole lines, each block token's
``map`` in the file's line indexes; the lines where list items start, from a parse
with lists off when that is safe (``structure``); headings.

A file of headings, paragraphs (list lines included) and fenced code only, the
daily log's shape, is read by ``scan`` without markdown-it-py: the same blocks as its
parse with lists off (tests compare the two), ten times faster. markdown-it-py is
imported on the first file ``scan`` declines."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

__all__ = [
    "WHOLE",
    "atx_headings",
    "fenced",
    "first_heading",
    "heading_title",
    "parse_blocks",
    "scan",
    "structure",
]


class Token(Protocol):
    """What the chunker reads of a block token: markdown-it-py's or ``scan``'s."""

    @property
    def type(self) -> str: ...
    @property
    def map(self) -> list[int] | None: ...
    @property
    def level(self) -> int: ...
    @property
    def tag(self) -> str: ...
    @property
    def content(self) -> str: ...
    @property
    def markup(self) -> str: ...


class _Block:
    """A block token of ``scan``: the fields of markdown-it-py's the chunker reads."""

    __slots__ = ("content", "level", "map", "markup", "tag", "type")

    def __init__(self, type: str, a: int, b: int, level: int = 0, tag: str = "") -> None:
        self.type = type
        self.map: list[int] | None = [a, b]
        self.level = level
        self.tag = tag
        self.content = ""
        self.markup = ""


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
    parsed = _parser(lists).parse(body)
    if first:
        for t in parsed:
            if t.map is not None:
                t.map = [t.map[0] + first, t.map[1] + first]
    tokens: list[Token] = list(parsed)
    return tokens


# What ``scan`` declines: a control character but tab, a line opening a blockquote,
# an HTML block or a reference definition, a table's pipe, a line of only - = * _
# (a thematic break or a setext underline), a tab in a line's indentation.
_SCAN_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_RULE_LINE = re.compile(r"[-=*_ \t]+")


def scan(lines: Sequence[str], first: int) -> list[Token] | None:
    """Block tokens of ``lines[first:]`` as markdown-it-py parses them with lists off,
    without it, for a file of ATX headings, paragraphs and closed fences only (at
    most three spaces in; list lines are paragraph text here). None for anything
    else, which is then parsed."""
    body = "\n".join(lines[first:])
    if _SCAN_CONTROL.search(body):
        return None
    refs = "]:" in body
    tokens: list[Token] = []
    in_para = -1  # first line of the open paragraph
    n = len(lines)
    i = first
    while i < n:
        line = lines[i]
        rest = line.lstrip(" ")
        c = rest[:1]
        if not c or (c == "\t" and not rest.strip(" \t")):  # blank: spaces and tabs only
            if in_para >= 0:
                _paragraph(tokens, in_para, i)
                in_para = -1
            i += 1
            continue
        indent = len(line) - len(rest)
        if in_para >= 0 and indent >= 4:
            i += 1  # a paragraph's continuation, whatever it holds
            continue
        if indent >= 4 or c in "><\t" or "|" in line:
            return None  # indented code, a quote, HTML, a tab, a table: parse it
        if (c in "-=*_" and _RULE_LINE.fullmatch(rest)) or (c == "[" and refs):
            return None
        fence = _FENCE.match(line) if c in "`~" else None
        heading = _ATX.match(line) if c == "#" else None
        if fence is None and heading is None:
            if in_para < 0:
                in_para = i
            i += 1
            continue
        if in_para >= 0:  # a fence or a heading ends the paragraph
            _paragraph(tokens, in_para, i)
            in_para = -1
        if heading is not None:
            block = _Block("heading_open", i, i + 1, tag=f"h{len(heading.group(1))}")
            block.markup = heading.group(1)
            title = _Block("inline", i, i + 1, level=1)
            title.content = " ".join(_ATX_CLOSE.sub("", heading.group(2)).split())
            tokens += (block, title)
            i += 1
            continue
        assert fence is not None
        mark = fence.group(1)
        if mark[0] == "`" and "`" in line[fence.end() :]:
            return None  # not a fence: text with a code span
        close = _fence_end(lines, i + 1, mark)
        if close < 0:
            return None  # open to the end: markdown-it's last line count differs
        block = _Block("fence", i, close + 1, tag="code")
        block.markup = mark
        tokens.append(block)
        i = close + 1
    if in_para >= 0:
        _paragraph(tokens, in_para, n)
    return tokens


def _paragraph(tokens: list[Token], a: int, b: int) -> None:
    tokens += (_Block("paragraph_open", a, b, tag="p"), _Block("inline", a, b, level=1))


def _fence_end(lines: Sequence[str], start: int, mark: str) -> int:
    """The line closing a fence opened with ``mark``, or -1."""
    for j in range(start, len(lines)):
        f = _FENCE.match(lines[j])
        if f is None:
            continue
        run, after = f.group(1), lines[j][f.end() :]
        if run[0] == mark[0] and len(run) >= len(mark) and not after.strip(" \t"):
            return j
    return -1


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
        scanned = scan(lines, first)
        tokens = parse_blocks(lines, first, len(lines), lists=False) if scanned is None else scanned
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


def fenced(lines: Sequence[str]) -> list[bool]:
    """Whether each line is inside a fenced code block opened at most three spaces in
    (its fences included)."""
    out = [False] * len(lines)
    fence = ""
    for i, line in enumerate(lines):
        f = _FENCE.match(line)
        if fence:
            out[i] = True
            if f and f.group(1)[0] == fence[0] and len(f.group(1)) >= len(fence):
                fence = "" if not line[f.end() :].strip() else fence
        elif f and not (f.group(1)[0] == "`" and "`" in line[f.end() :]):
            fence, out[i] = f.group(1), True
    return out


def atx_headings(lines: Sequence[str], first: int) -> list[tuple[int, int, str]]:
    """(line, level, title) of every ``#`` heading in ``lines[first:]`` outside a
    fenced block (``fenced``), without a parser: for files too long to parse.
    Setext headings and containers are not read."""
    out: list[tuple[int, int, str]] = []
    code = fenced(lines[first:])
    for i in range(first, len(lines)):
        m = None if code[i - first] else _ATX.match(lines[i])
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
    block = lines[start:end]
    # A reference definition is no token: the heading may be the block's next line;
    # a "#" line with a pipe may head a table (tried before headings).
    if not any(_SCAN_CONTROL.search(line) or "]:" in line or "|" in line for line in block):
        heading = _ATX.match(block[0]) if block else None
        if heading is not None:  # a "#" line opens a heading wherever a block starts
            return " ".join(_ATX_CLOSE.sub("", heading.group(2)).split())
        if not any(_RULE_LINE.fullmatch(line) for line in block):
            return ""  # no setext underline: the block is no heading
    tokens = parse_blocks(lines, start, end)
    if tokens and tokens[0].type == "heading_open":
        return heading_title(tokens, 0)[1]
    return ""
