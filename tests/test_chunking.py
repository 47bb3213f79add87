from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from indexer.sources.chunking import chunk_markdown, split_lines
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


def fences_in(lines: list[str], start: int, end: int) -> bool:
    return any(ln.lstrip().startswith(("```", "~~~")) for ln in lines[start - 1 : end])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lines=st.lists(line_text, min_size=0, max_size=120),
    tokens=st.integers(min_value=16, max_value=200),
    overlap_frac=st.floats(min_value=0.0, max_value=0.5),
    crlf=st.booleans(),
)
def test_chunk_properties(lines: list[str], tokens: int, overlap_frac: float, crlf: bool) -> None:
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
        # No chunk above the limit unless it is one line or holds a fence.
        size = measure(file_lines[c.start_line - 1 : c.end_line])
        if size > tokens:
            assert c.start_line == c.end_line or fences_in(file_lines, c.start_line, c.end_line)
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
