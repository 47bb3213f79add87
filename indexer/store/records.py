"""The rows the store reads and writes, and its constants."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING, Any

import apsw

from indexer.api.responses import SkippedFile
from indexer.errors import StoreError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

# PRAGMA mmap_size of a connection. A one-shot process maps up to 1 GB (a search of a
# million-chunk file from the CLI: 1.1 s, against 1.5 s with 256 MB). A daemon maps
# 256 MB (an index of 100,000 chunks, ~250 MB, still whole): the pages its searches
# touch count in its RSS once per connection, and 1 GB let a million-chunk daemon
# show 2.0-2.4 GB of RSS for 1.1 GB of its own memory (1.5 GB with 256 MB).
MMAP_BYTES = 1 << 30
DAEMON_MMAP_BYTES = 256 << 20
# The FTS5 tokenizer of chunks_fts (migrations) and BM25 weights of its body,
# heading and path columns (source: 0); keywords.py replicates both.
FTS_TOKENIZER = "porter unicode61 remove_diacritics 2"
FTS_WEIGHTS = (1.0, 1.0, 0.5)


@dataclass(frozen=True, slots=True)
class KeywordQuery:
    """A keyword search as phrases of words (a single word is a one-word phrase):
    every ``required`` phrase must match and, if there are ``optional`` ones, the
    rows are ranked by all of them. Each store turns it into its own query
    (``phrases`` lists what is scored, in the order FTS5 scores it)."""

    required: tuple[tuple[str, ...], ...]
    optional: tuple[tuple[str, ...], ...]

    def phrases(self) -> list[tuple[str, ...]]:
        """The scored phrases: required AND (optional OR required) when both kinds
        are present (so a required phrase is scored twice, as FTS5 does)."""
        if self.required and self.optional:
            return [*self.required, *self.optional, *self.required]
        return [*self.required, *self.optional]


# A chunk's tokens as a store keeps them: (id, its distinct terms, each one's count in
# the body, the heading's, path's and source's tokens in order).
ChunkTokens = tuple[int, list[str], list[int], list[str], list[str], list[str]]


@dataclass(frozen=True, slots=True)
class KeywordPostings:
    """What an in-memory BM25 index is built from, read in one snapshot: every chunk
    (id, source) by id, and for each term and column the ids of the chunks holding
    it once per occurrence (tokens exactly as the keyword search's tokenizer makes
    them). ``terms`` is read as it is consumed (one term at a time in memory).
    A store that keeps its tokens by chunk (PostgreSQL) gives ``by_chunk`` instead,
    read as consumed too, and no ``terms``: grouping them by term in the database
    would sort every occurrence."""

    chunks_version: str | None
    seq: int  # the change feed's position they were read at (``change_seq``)
    chunks: list[tuple[int, str]]
    terms: Iterator[tuple[str, str, npt.NDArray[np.int64]]]  # (term, column, chunk ids)
    by_chunk: Iterator[ChunkTokens] | None = None


@dataclass(frozen=True, slots=True)
class ChunkChanges:
    """The change feed after some position, up to ``seq``: chunks deleted, chunks
    embedded or re-embedded, chunks moved to another path (in that order of kinds;
    a chunk may be in several). Chunks added need no entry: their ids are above
    every id a reader has seen."""

    seq: int
    deleted: list[int]
    embedded: list[int]
    moved: list[int]

    @classmethod
    def fold(
        cls, rows: Iterable[tuple[Any, Any, Any]], after: int, head: Callable[[], int]
    ) -> ChunkChanges:
        """The feed's (seq, chunk, kind) rows after ``after``, in seq order, sorted by
        kind (0 deleted, 1 embedded, 2 moved); ``seq`` is the last row's, or ``head()``
        (the store's ``change_seq``, read after the rows) if that is higher."""
        kinds: tuple[list[int], list[int], list[int]] = ([], [], [])
        seq = after
        for s, cid, kind in rows:
            seq = int(s)
            if 0 <= kind <= 2:
                kinds[kind].append(int(cid))
        return cls(max(seq, head()), *kinds)


@dataclass(frozen=True, slots=True)
class NewChunk:
    """What a keyword snapshot indexes of a chunk: its FTS columns' sources."""

    id: int
    source: str
    path: str
    heading: str
    text: str


@dataclass(frozen=True, slots=True)
class FileState:
    """What a file was when indexed: its hash, change stamp and size."""

    hash: str
    mtime_ns: int  # compared for equality only: folded into a signed 64-bit value
    size: int

    def __post_init__(self) -> None:
        # A file dated past 2262 (or mtime + ctime past 2203) is over what a 64-bit
        # column holds: both stores refused it, and it was never indexed.
        if not 0 <= self.mtime_ns < 1 << 63:
            object.__setattr__(self, "mtime_ns", self.mtime_ns % (1 << 63))


@dataclass(frozen=True, slots=True)
class CatchUp:
    """What an in-memory snapshot needs to catch up with the change feed
    (``IndexStore.catch_up``), read in one snapshot of the index."""

    changes: ChunkChanges
    new: list[NewChunk]  # chunks added (or moved) since the keyword part's last id
    embedded: list[tuple[int, str, bytes]]  # (chunk id, source, vector) embedded since


@dataclass(frozen=True, slots=True)
class FilesAtStart:
    """What a sync of one source compares the files on disk against
    (``IndexStore.begin_files``)."""

    cleared: str | None  # why the index was emptied first, or None
    known: dict[str, FileState]  # the source's files as indexed
    skipped: list[SkippedFile]  # every source's skipped files (logged before)


@dataclass(frozen=True, slots=True)
class ChunkRow:
    """A chunk as the pipeline hands it to the store."""

    start_line: int
    end_line: int
    heading: str
    hash: str
    text: str
    fts_body: str
    # Transcript chunks: the file line of each text line, as offsets from start_line
    # ("0,1,3": a malformed or noise line between); None when text line k is file
    # line start_line + k (Markdown, and transcripts without gaps).
    lines: str | None = None
    # Transcript chunks: the time of their newest message (epoch seconds; None when no
    # message said, and for Markdown, whose date is its file name's)
    at: float | None = None
    # Transcript chunks: "<originClass>:<sessionKind>" (OpenClaw's provenance: the
    # least trusted of its messages' classes, and the session's kind); None for
    # Markdown (its file's class is its provenance) and chunks indexed before
    origin: str | None = None

    @property
    def same_as(self) -> tuple[int, int, str, str, str | None]:
        """What a stored row must equal to be this chunk (``replace_file`` keeps it)."""
        return (self.start_line, self.end_line, self.heading, self.hash, self.lines)


@dataclass(frozen=True, slots=True)
class NewFile:
    """A file not indexed before, with its chunks (``append_files`` writes several)."""

    path: str
    source: str
    state: FileState
    lines: int
    chunks: Sequence[ChunkRow]


STORED_CHUNK_COLS = "id, start_line, end_line, heading, hash, lines"  # what kept_apart reads


def kept_apart(
    stored: Iterable[Sequence[Any]], chunks: Iterable[ChunkRow]
) -> tuple[list[ChunkRow], list[int]]:
    """``replace_file``'s split of a file's stored rows (``STORED_CHUNK_COLS``) and its
    new ``chunks``: the chunks to insert, and the ids of the stored rows to delete; a
    stored row equal to one of the chunks (``ChunkRow.same_as``) is kept."""
    ids = {(int(s), int(e), str(h), str(k), ln): int(cid) for cid, s, e, h, k, ln in stored}
    new = [c for c in chunks if ids.pop(c.same_as, None) is None]
    return new, list(ids.values())


@dataclass(frozen=True, slots=True)
class SessionCursor:
    """How far a transcript is indexed: the file is known by (dev, ino) and by a hash
    of its first ``head_len`` bytes; ``committed`` bytes / ``lines`` lines are in."""

    path: str
    dev: int
    ino: int
    committed: int
    lines: int
    head: str
    head_len: int
    malformed: int


_DATED = re.compile(r"(?:^|/)memory/(?:.*/)?(\d{4})-(\d{2})-(\d{2})[^/]*\.md$")


def log_date(path: str) -> date | None:
    """The date of a dated daily log (``memory/2026-11-21.md``) from its path, else
    None."""
    m = _DATED.search(path)
    if not m:
        return None
    try:
        return date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class SearchRow:
    """A chunk as a search reads it from the store."""

    id: int
    path: str
    source: str
    start_line: int
    end_line: int
    heading: str
    text: str
    rank: float  # BM25 (bm25.py): negative, lower is better; 0.0 when read by id
    lines: str | None = None  # as ChunkRow.lines
    at: float | None = None  # as ChunkRow.at
    origin: str | None = None  # as ChunkRow.origin

    def file_line(self, k: int) -> int:
        """The file line of text line ``k`` (0-based) of this chunk."""
        if self.lines is None:
            return self.start_line + k
        offsets = self.lines.split(",")
        return self.start_line + int(offsets[max(0, min(k, len(offsets) - 1))])

    def text_line(self, file_line: int) -> int:
        """The text line (0-based) holding ``file_line``; -1 when none does."""
        if self.lines is None:
            k = file_line - self.start_line
            return k if 0 <= k <= self.end_line - self.start_line else -1
        want = str(file_line - self.start_line)
        offsets = self.lines.split(",")
        return offsets.index(want) if want in offsets else -1


# What means the index itself is in trouble (as opposed to one file being odd).
INDEX_ID = "indexId"  # meta: the id an index's first writer gave it (``identity``)
# meta: the session ids `openclaw memory forget` recorded, as last read (JSON list):
# a forgotten session stays forgotten if the database loses its tombstone (a backup
# restored) or cannot be read
FORGOTTEN = "openclaw.forgotten"
STORE_ERRORS: tuple[type[BaseException], ...] = (apsw.Error, StoreError)
