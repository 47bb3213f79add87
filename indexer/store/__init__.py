"""Where the index lives: the only package that runs the index's SQL (OpenClaw's own
agent database, a foreign file read only, is read by its transcript source,
``sources.transcripts.agent_db``).

``base`` is the interface the write and read paths are written against: the
``IndexStore`` protocol, made of small parts (files and chunks, the change feed,
cursors and skips, keyword search, vectors, the embedding cache and batch jobs,
upkeep). ``sqlite`` implements it in one file per agent, ``postgres`` in one shared
database; ``backend`` is the factory (``backend_for``: which one an agent's config
names, its generations and its one-writer lock, ``writer_lock``). ``records`` holds
the row types every caller uses.

Writes happen inside ``transaction()``: a file's rows are replaced in one
transaction, so a crash leaves its old or its new version.
"""

from indexer.store.base import IndexStore
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
    NewFile,
    SearchRow,
    SessionCursor,
)
from indexer.store.sqlite import Store, private_dir, private_file

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
    "NewFile",
    "SearchRow",
    "SessionCursor",
    "Store",
    "private_dir",
    "private_file",
]
