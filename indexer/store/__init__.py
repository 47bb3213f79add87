"""The index file: one SQLite database per agent. The only package that writes SQL.

Split by concern, each a class the next builds on: ``base`` (connection, pragmas,
migrations, transactions, meta), ``chunks`` (files, chunks and their FTS rows,
transcript cursors, skipped files), ``vectors`` (sqlite-vec, the embedding cache,
batch jobs) and ``sqlite`` (``Store``: all of them, keyword search, health checks).
``records`` holds the row types every caller uses; ``interface`` the ``IndexStore``
protocol the write and read paths are written against (``Store`` implements it);
``qmd_catalogue`` QMD's documents table for ``memindex-qmd``.

Opened through apsw (a binding that bundles a current SQLite with FTS5 and can load
extensions on Linux and macOS), in WAL mode. sqlite-vec is loaded when it can be;
when it cannot, keyword search keeps working and ``vector_error`` says why.

Writes happen inside ``transaction()`` (BEGIN IMMEDIATE ... COMMIT): a file's rows
are replaced in one transaction, so a crash leaves its old or its new version.
"""

from indexer.store.base import private_dir, private_file
from indexer.store.interface import IndexStore
from indexer.store.records import (
    FTS_TOKENIZER,
    FTS_WEIGHTS,
    MMAP_BYTES,
    STORE_ERRORS,
    ChunkChanges,
    ChunkRow,
    FileState,
    KeywordPostings,
    NewChunk,
    SearchRow,
    SessionCursor,
)
from indexer.store.sqlite import Store

__all__ = [
    "FTS_TOKENIZER",
    "FTS_WEIGHTS",
    "MMAP_BYTES",
    "STORE_ERRORS",
    "ChunkChanges",
    "ChunkRow",
    "FileState",
    "IndexStore",
    "KeywordPostings",
    "NewChunk",
    "SearchRow",
    "SessionCursor",
    "Store",
    "private_dir",
    "private_file",
]
