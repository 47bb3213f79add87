"""OpenClaw's curated memory: MEMORY.md and USER.md as entries, and the annotations
writers put on them (OpenClaw 2026.9, ``docs/concepts/memory-architecture.md``):

    - Keep the gateway on loopback. <!-- trigger: gateway setup --> <!-- importance: 9 -->
    - Use the release helper. <!-- project: github.com/openclaw/openclaw -->

* An **entry** starts at a line beginning ``- `` at column 0, a **section** at a
  heading, outside fenced code; everything else (continuations, nested bullets,
  paragraphs, blank lines) belongs to the entry or section before it. A curated
  file is chunked entry by entry (a long one split further), so a hit is the entry
  and its ranking signals are the entry's.
* ``trigger`` (phrases split on ``,`` or ``;``) and ``importance`` (an integer 1-10,
  the highest if several) count only on a curated root file and only on a line that
  ends with ``-->``; ``project`` keys (split on ``;``, the host lower-cased) count in
  any memory file except USER.md, anywhere in the entry; an empty, unclosed or
  malformed project annotation makes the entry's key ``!invalid-project-annotation``
  (such an entry is never shown).
* The annotations are kept in the stored text (so they can be read back) and taken
  out of what is indexed for keywords and shown as snippets.

The behaviour is OpenClaw's own (its SDK's ``extractCuratedEntryRecallMetadata``,
``stripMemoryAnnotationCarriers``); ``integrations/openclaw/scripts/curated-parity.mjs``
compares this module with the SDK on the same inputs.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator
from dataclasses import dataclass

from indexer.sources.chunking import Chunk, chunk_markdown, split_lines
from indexer.sources.markdown_blocks import fenced
from indexer.sources.tokenizer import TokenCounter

__all__ = [
    "HEADING",
    "LIST_MARK",
    "CURATED_ROOTS",
    "INVALID_PROJECT",
    "EntryMeta",
    "curated_chunks",
    "entry_spans",
    "is_curated_root",
    "project_keys",
    "meta_of",
    "project_eligible",
    "strip_annotations",
]

CURATED_ROOTS = ("MEMORY.md", "memory.md", "USER.md")
INVALID_PROJECT = "!invalid-project-annotation"
_ANY = re.compile(r"<!--\s*(trigger|importance|project)\s*:", re.I)
_PROJECT = re.compile(r"<!--\s*(project)\s*:", re.I)
HEADING = re.compile(r"#{1,6}(\s|$)")  # a Markdown heading's start
# a list item's mark: "- ", "* ", "1. ", a task box "- [x] "
LIST_MARK = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?")
_PHRASE = re.compile(r"[^,;]+")
MAX_TRIGGERS = 256  # trigger phrases read of one entry (an agent-written entry held 700,000)
_NEWLINE = re.compile(r"[\r\n]")


@dataclass(frozen=True, slots=True)
class EntryMeta:
    """A curated entry's annotations: importance, triggers, projects."""

    importance: int | None
    triggers: str | None  # "; "-joined phrases
    project_key: str | None  # "; "-joined keys, or INVALID_PROJECT


def project_keys(project_key: str | None) -> list[str]:
    """The repository keys of a ``"; "``-joined project annotation."""
    return [k.strip() for k in (project_key or "").split(";") if k.strip()]


def is_curated_root(path: str) -> bool:
    return path in CURATED_ROOTS


def project_eligible(path: str) -> bool:
    """Project keys count in every memory file but USER.md (user-level)."""
    return path.upper() != "USER.MD"


def _scan(text: str, marker: re.Pattern[str], line_scoped: bool = False) -> Iterator[
    tuple[int, int, str, str]
]:  # fmt: skip
    """(start, end, kind, value) of each annotation ``<!-- kind: value -->``.

    Linear in the text: every ``-->`` and line break is found once, and each marker
    looks its closing up among them (an agent-written entry of unclosed markers once
    cost a scan to the end per marker)."""
    closings: list[int] | None = None
    breaks: list[int] | None = None
    pos = 0
    while True:
        m = marker.search(text, pos)
        if m is None:
            return
        if closings is None:
            closings = [c.start() for c in re.finditer("-->", text)]
        i = bisect.bisect_left(closings, m.end())
        if i == len(closings):
            return
        closing = closings[i]
        if line_scoped:
            if breaks is None:
                breaks = [b.start() for b in _NEWLINE.finditer(text)]
            j = bisect.bisect_left(breaks, m.end())
            if j < len(breaks) and breaks[j] < closing:
                pos = m.end()
                continue
        yield m.start(), closing + 3, m.group(1).lower(), text[m.end() : closing].strip()
        pos = closing + 3


def strip_annotations(text: str) -> str:
    """``text`` without its single-line trigger/importance/project annotations (and
    the spaces they leave at a line's end)."""
    parts: list[str] = []
    cursor = 0
    for start, end, _kind, _value in _scan(text, _ANY, line_scoped=True):
        parts.append(text[cursor:start])
        cursor = end
    if cursor == 0:
        return text
    parts.append(text[cursor:])
    return re.sub(r"[ \t]+(?=[\r\n\u2028\u2029]|$)", "", "".join(parts))


def _project_key(value: str) -> str | None:
    key = value.strip()
    if not key or re.search(r"[\r\n<>]", key):
        return None
    if key.startswith("path:"):
        return key
    slash = key.find("/")
    return key if slash < 1 else key[:slash].lower() + key[slash:]


def _project(text: str) -> str | None:
    markers = len(_PROJECT.findall(text))
    if not markers:
        return None
    keys: list[str] = []
    parsed = raw = valid = 0
    for _s, _e, _k, value in _scan(text, _PROJECT):
        parsed += 1
        for part in value.split(";"):
            raw += 1
            key = _project_key(part)
            if key is not None:
                valid += 1
                if key not in keys:
                    keys.append(key)
    if parsed != markers or raw == 0 or raw != valid:
        return INVALID_PROJECT
    return "; ".join(keys) if keys else None


def meta_of(path: str, text: str) -> EntryMeta:
    """The recall metadata of an entry (or any chunk) of the memory file ``path``."""
    project = _project(text) if project_eligible(path) else None
    if not is_curated_root(path) or "<!--" not in text:
        return EntryMeta(None, None, project)
    phrases: dict[str, None] = {}  # in order, each once (a list's `in` was quadratic)
    importance: int | None = None
    for line in text.split("\n"):
        if not line.rstrip().endswith("-->"):
            continue
        for _s, _e, kind, value in _scan(line, _ANY):
            if kind == "trigger":
                for m in _PHRASE.finditer(value):
                    if len(phrases) >= MAX_TRIGGERS:
                        break  # an entry's first MAX_TRIGGERS phrases: its cost bounded
                    phrase = m.group(0).strip()
                    if phrase:
                        phrases[phrase] = None
            elif kind == "importance" and re.fullmatch(r"\d+", value, re.ASCII):
                n = int(value)
                if 1 <= n <= 10:
                    importance = n if importance is None else max(importance, n)
    return EntryMeta(importance, "; ".join(phrases) if phrases else None, project)


def entry_spans(lines: list[str]) -> list[tuple[int, int]]:
    """The (first, last) 0-based line spans of a curated file's entries and
    sections, in order; a span of only blank lines is left out. A line inside a
    fenced code block starts nothing: a "## comment" in a script is no section
    (memory-core splits there too, but has no heading path to lose to it)."""
    code = fenced(lines)
    starts = [
        i
        for i, line in enumerate(lines)
        if i == 0 or (not code[i] and (line.startswith("- ") or HEADING.match(line)))
    ]
    spans = []
    for n, first in enumerate(starts):
        last = (starts[n + 1] if n + 1 < len(starts) else len(lines)) - 1
        if any(line.strip() for line in lines[first : last + 1]):
            spans.append((first, last))
    return spans


def _heading_only(lines: list[str]) -> bool:
    return all(not line.strip() or HEADING.match(line) for line in lines) and not any(
        "<!--" in line for line in lines
    )


def curated_chunks(text: str, count: TokenCounter, *, tokens: int, overlap: int) -> list[Chunk]:
    """A curated file's chunks: one per entry or section (a long one cut further by
    the chunker, line numbers kept), each with the heading path in effect
    (``"Memory > People"``). A section that is only its heading, with entries or a
    deeper section under it, is not a chunk of its own: its title is in the path of
    what follows (so ``## People`` is not a hit for "people", Dana's entry is)."""
    lines = split_lines(text)
    spans = entry_spans(lines)
    out: list[Chunk] = []
    stack: list[str] = []
    paths: list[str] = []
    levels: list[int] = []
    for first, _last in spans:
        m = HEADING.match(lines[first])
        level = 0
        if m:
            level = len(lines[first]) - len(lines[first].lstrip("#"))
            del stack[level - 1 :]
            stack.extend([""] * (level - 1 - len(stack)))
            stack.append(strip_annotations(lines[first].lstrip("#")).strip())
        paths.append(" > ".join(t for t in stack if t))
        levels.append(level)
    for n, (first, last) in enumerate(spans):
        following = levels[n + 1] if n + 1 < len(spans) else -1
        nested = following == 0 or following > levels[n] > 0
        if nested and levels[n] and _heading_only(lines[first : last + 1]):
            continue
        body = "\n".join(lines[first : last + 1])
        for c in chunk_markdown(body, count, tokens=tokens, overlap=overlap):
            out.append(Chunk(first + c.start_line, first + c.end_line, c.text, paths[n], c.hash))
    return out
