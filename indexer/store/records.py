"""The rows the store reads and writes, and its constants."""

from __future__ import annotations

from dataclasses import dataclass

import apsw

from ..errors import StoreError

MMAP_BYTES = 1 << 30  # PRAGMA mmap_size of every connection
# The FTS5 tokenizer of chunks_fts (migrations) and BM25 weights of its body,
# heading and path columns (source: 0); keywords.py replicates both.
FTS_TOKENIZER = "porter unicode61 remove_diacritics 2"
FTS_WEIGHTS = (1.0, 1.0, 0.5)


@dataclass(frozen=True, slots=True)
class FileState:
    hash: str
    mtime_ns: int
    size: int


@dataclass(frozen=True, slots=True)
class ChunkRow:
    """A chunk as the pipeline hands it to the store."""

    start_line: int
    end_line: int
    heading: str
    hash: str
    text: str
    fts_body: str


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


@dataclass(slots=True)  # not frozen: load_rows fills pending rows in place
class SearchRow:
    id: int
    path: str
    source: str
    start_line: int
    end_line: int
    heading: str
    text: str
    rank: float  # BM25 (bm25.py): negative, lower is better
    # False: a candidate from in-memory state (id, source and rank only) whose row
    # has not been read yet (Store.load_rows); still False after loading if the
    # chunk was deleted in between.
    loaded: bool = True

    @classmethod
    def pending(cls, cid: int, source: str, rank: float = 0.0) -> SearchRow:
        return cls(cid, "", source, 0, 0, "", "", rank, False)


# What means the index itself is in trouble (as opposed to one file being odd).
STORE_ERRORS: tuple[type[BaseException], ...] = (apsw.Error, StoreError)
