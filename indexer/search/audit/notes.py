"""The memory files an audit reads, as entries and lines: the curated files'
entries (MEMORY.md and USER.md, a bullet with its continuation lines or a
paragraph, annotations taken out) and the dated notes' lines, each read under
memory_get's rules (no symlink followed, regular files only, bounded reads); a file
that cannot be read is named, never fatal."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from datetime import date

from indexer.config import Config
from indexer.errors import MemindexError, NotFound, PathRefused, checkpoint
from indexer.search.documents import read_document
from indexer.sources.chunking import split_lines
from indexer.sources.curated import HEADING, LIST_MARK, entry_spans, strip_annotations
from indexer.sources.files import read_text
from indexer.store.records import log_date

__all__ = ["CURATED", "OTHER_BOOTSTRAP", "Entry", "Note", "Notes", "read_notes"]

CURATED = ("MEMORY.md", "USER.md")  # what OpenClaw loads at session start


@dataclass(frozen=True)
class Entry:
    """A curated entry: its file, 1-based first and last line, its text (one line,
    annotations and list marks taken out) and the heading it sits under."""

    path: str
    start: int
    end: int
    text: str
    heading: str = ""

    @property
    def cite(self) -> str:
        return f"{self.path}#L{self.start}-L{self.end}"


@dataclass(frozen=True)
class Note:
    """A line of a dated note (a daily log): file, 1-based line, text, day."""

    path: str
    line: int
    text: str
    day: date

    @property
    def cite(self) -> str:
        return f"{self.path}#L{self.line}-L{self.line}"


@dataclass
class Notes:
    """What an audit reads: the curated files' text and entries, the dated notes'
    lines, every memory file's lines (for secrets), and the files it could not read."""

    curated_text: dict[str, str] = field(default_factory=dict)
    # the other files OpenClaw injects before MEMORY.md: name -> their text (absent:
    # not there, or not readable as memindex reads files)
    bootstrap_text: dict[str, str] = field(default_factory=dict)
    entries: list[Entry] = field(default_factory=list)
    dated: list[Note] = field(default_factory=list)
    files: dict[str, list[str]] = field(default_factory=dict)
    unread: dict[str, str] = field(default_factory=dict)


# What OpenClaw injects at session start besides MEMORY.md and USER.md, in its order
# (WORKSPACE_BOOTSTRAP_FILENAMES of 2026.9.6): their share of the total cap.
OTHER_BOOTSTRAP = ("AGENTS.md", "SOUL.md", "IDENTITY.md", "BOOTSTRAP.md")


def read_notes(cfg: Config, paths: list[str]) -> Notes:
    """The memory files ``paths`` (as the index names them), the curated files and
    the other bootstrap files."""
    out = Notes()
    for name in OTHER_BOOTSTRAP:
        if cfg.workspace is None:
            break
        with contextlib.suppress(OSError, MemindexError):
            out.bootstrap_text[name] = read_text(
                cfg.workspace, (name,), cfg.limits.maxFileBytes, exact=True
            ).text
    for path in dict.fromkeys([*CURATED, *sorted(paths)]):
        checkpoint()  # the client still waits
        try:
            display, text = read_document(cfg, path)
        except NotFound:
            continue
        except PathRefused as exc:
            out.unread[path] = exc.message
            continue
        lines = split_lines(text)
        out.files[display] = lines
        if display in CURATED:
            out.curated_text[display] = text
            out.entries.extend(curated_entries(display, lines))
            continue
        day = log_date(display)
        if day is not None:
            out.dated.extend(
                Note(display, n + 1, line.strip(), day)
                for n, line in enumerate(lines)
                if line.strip() and not HEADING.match(line)
            )
    return out


def curated_entries(path: str, lines: list[str]) -> list[Entry]:
    """The entries of a curated file: each bullet with its continuation lines, each
    paragraph of a section; headings are not entries."""
    out: list[Entry] = []
    heading = ""
    for first, last in entry_spans(lines):
        para: list[int] = []
        for n in range(first, last + 2):
            line = lines[n] if n <= last else ""
            if HEADING.match(line):
                heading = line.lstrip("#").strip()
                line = ""
            if line.strip():
                para.append(n)
                continue
            if para:
                text = " ".join(LIST_MARK.sub("", lines[k]).strip() for k in para)
                text = strip_annotations(text).strip()
                if text:
                    out.append(Entry(path, para[0] + 1, para[-1] + 1, text, heading))
                para = []
    return out
