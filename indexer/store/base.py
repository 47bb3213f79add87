"""What the write path (``Indexer`` and the modules it drives) and the read path
(``Searcher``, the search stages, the in-memory snapshots) need from a store: the
``IndexStore`` protocol, made of nine small parts a caller can be written against
on its own:

- ``Connection``: open, close, transactions, meta, the change versions;
- ``FilesAndChunks``: each file's state and chunks, replaced or appended whole;
- ``ChangeFeed``: what changed since a sequence number (for in-memory snapshots);
- ``CursorsAndSkips``: transcript read positions and the files left out, with why;
- ``KeywordIndex``: BM25 search and the postings the daemon keeps in memory;
- ``Vectors``: the chunk vectors and nearest-neighbour search;
- ``EmbeddingCache``: vectors by chunk hash, kept across rebuilds, and batch jobs;
- ``Upkeep``: carrying work over to a new generation, checkpoints, health.

``sqlite.Store`` (one file per agent) and ``postgres.store.PgStore`` (one shared
database) implement it; mypy checks that both conform.

Rules every implementation keeps:
- a file's rows (its chunks, their keyword rows and vectors) change inside one
  ``transaction()``, so a reader and a crash see the old or the new version;
- chunk ids only grow: an id names one chunk text for the life of the index;
- the change feed (``changes_since``) lists every chunk deleted, (re-)embedded or
  moved, in commit order, so a snapshot catches up without reading everything;
- ``change_versions()`` changes with every commit that could change a search;
- writes come from one writer per index; reads never block on it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from typing import Protocol

from indexer.api.responses import BatchJob, SkippedFile
from indexer.store.records import (
    FTS_WEIGHTS,
    CatchUp,
    ChunkChanges,
    ChunkRow,
    FilesAtStart,
    FileState,
    KeywordPostings,
    KeywordQuery,
    NewChunk,
    NewFile,
    SearchRow,
    SessionCursor,
)
from indexer.store.writer_lock import WriterLock

__all__ = [
    "ChangeFeed",
    "Connection",
    "CursorsAndSkips",
    "EmbeddingCache",
    "FilesAndChunks",
    "IndexStore",
    "KeywordIndex",
    "Upkeep",
    "Vectors",
]


class Connection(Protocol):
    generation: str  # names the generation this connection reads (a new one after a rebuild)
    vec_version: str | None  # the vector extension's version; None: keyword only
    vector_error: str | None  # why vectors are unavailable
    readonly: bool  # opened for reading only
    # a writable store opened by its backend holds the agent's one-writer lock
    # (``writer_lock``), released by ``close()``; None for readers and for a new
    # generation a rebuild fills (the rebuilding writer holds the lock)
    writer_lock: WriterLock | None

    @property
    def identity(self) -> str:
        """Which index the generation is: the file deleted and made again under the
        same name, or an agent's rows dropped and made again, is another index
        (what the daemon's snapshot and caches are kept for)."""
        ...

    def close(self) -> None: ...
    def __enter__(self) -> IndexStore: ...
    def __exit__(self, *exc: object) -> None: ...
    def reopen(self) -> IndexStore:
        """Another read-only connection to the same generation (for another thread;
        the daemon's snapshot reads through these)."""
        ...

    def broken(self) -> bool:
        """This store can only fail, or write where nobody reads: its connection is
        lost (a database server that restarted or went away) or its file was deleted
        or replaced. Its owner opens a new one."""
        ...

    def transaction(self) -> AbstractContextManager[None]: ...
    def read_snapshot(self) -> AbstractContextManager[None]: ...
    def savepoint(self) -> AbstractContextManager[None]: ...
    def batch(self) -> AbstractContextManager[Callable[[], None]]: ...
    def meta_get(self, key: str) -> str | None: ...
    def meta_set(self, key: str, value: str) -> None: ...
    def change_versions(self) -> tuple[str | None, str | None, str | None]:
        """(chunksVersion, vectorsVersion, vectorKey) in one read."""
        ...


class FilesAndChunks(Protocol):
    def file_states(self, source: str | None = None) -> dict[str, FileState]: ...
    def file_lines(self, path: str) -> int | None: ...
    def touch_file(self, path: str, mtime_ns: int, size: int) -> None: ...
    def delete_file(self, path: str) -> int: ...
    def replace_file(
        self, path: str, source: str, state: FileState, lines: int, chunks: Iterable[ChunkRow]
    ) -> tuple[int, int]:
        """``path``'s rows become ``chunks``: a stored chunk equal to one of them
        (``ChunkRow.same_as``: lines, heading, text hash) is kept with its id and
        vector, the others deleted, the new ones inserted (a line appended to a long
        daily log rewrites its last chunk, not all of them). Returns (chunks
        removed, chunks written)."""
        ...

    def append_chunks(
        self, path: str, source: str, state: FileState, lines: int, chunks: Iterable[ChunkRow]
    ) -> int: ...
    def append_files(self, files: Sequence[NewFile]) -> int:
        """``append_chunks`` of each of ``files`` (new files; one statement on
        PostgreSQL), atomic inside the caller's transaction or savepoint. Returns
        the chunks written."""
        ...

    def rename_path(self, old: str, new: str, prepare: Callable[[str], str]) -> None: ...
    def drop_chunks_after(self, path: str, line: int) -> int:
        """Delete ``path``'s chunks that start past ``line`` (a transcript's tail, indexed
        before its cursor moved there); returns how many."""
        ...

    def clear(self) -> None: ...
    def has_source(self, source: str) -> bool: ...
    def chunk_rows(self, ids: Sequence[int]) -> dict[int, SearchRow]: ...
    def window_ids(
        self, paths: Sequence[str], start: float, end: float, limit: int
    ) -> list[tuple[int, float | None]]:
        """(id, at) of the chunks of ``paths`` (dated daily logs), and of at most
        ``limit`` chunks timed in [``start``, ``end``) (transcripts), the newest first."""
        ...

    def texts_for_hashes(self, hashes: Sequence[str]) -> dict[str, str]: ...
    def counts(self) -> dict[str, dict[str, int]]: ...


class ChangeFeed(Protocol):
    def change_seq(self) -> int: ...
    def changes_since(self, after: int) -> ChunkChanges | None:
        """Chunks deleted, (re-)embedded and moved after ``after``; None: pruned."""
        ...

    def prune_changes(self, keep: int) -> int: ...
    def new_chunks(self, after_id: int, also: Sequence[int] = ()) -> list[NewChunk]: ...


class CursorsAndSkips(Protocol):
    def session_cursors(self) -> dict[str, SessionCursor]: ...
    def put_session_cursor(self, c: SessionCursor) -> None: ...
    def delete_session(self, path: str) -> int: ...
    def record_skip(self, path: str, source: str, reason: str) -> None: ...
    def clear_skip(self, path: str) -> None: ...
    def prune_skips(self, keep: set[str], source: str) -> None: ...
    def sync_skips(self, source: str, items: Sequence[tuple[str, str]]) -> None: ...
    def skipped(self) -> list[SkippedFile]: ...


class KeywordIndex(Protocol):
    def fts_search(
        self,
        query: KeywordQuery,
        limit: int,
        sources: Sequence[str] | None = None,
        weights: tuple[float, float, float] = FTS_WEIGHTS,
        *,
        fts5_idf: bool = False,
    ) -> list[SearchRow]: ...
    def keyword_postings(
        self, min_chunks: int = 0
    ) -> AbstractContextManager[KeywordPostings | None]: ...


class Vectors(Protocol):
    def has_vectors(self) -> bool: ...
    def ensure_vector_table(self, dims: int) -> None: ...
    def put_vectors(self, rows: Iterable[tuple[int, bytes]]) -> None: ...
    def vector_dims(self) -> int | None: ...
    def drop_vectors(self) -> None: ...
    def any_embedded(self) -> bool: ...
    def pending_chunks(self, limit: int, after: int = 0) -> list[tuple[int, str, str]]: ...
    def pending_count(self) -> int: ...
    def all_vectors(self) -> Iterable[tuple[int, str, str, bytes]]: ...
    def vector_rows(self, ids: Sequence[int]) -> list[tuple[int, str, bytes]]: ...
    def knn(self, query: bytes, k: int) -> list[tuple[int, float]]: ...


class EmbeddingCache(Protocol):
    def cache_get(self, provider: str, hashes: Sequence[str]) -> dict[str, bytes]: ...
    def cache_put(self, provider: str, dims: int, items: Iterable[tuple[str, bytes]]) -> None: ...
    def cache_prune(self, max_entries: int) -> int: ...
    def cache_count(self) -> int: ...
    def batch_jobs(self, provider: str) -> dict[str, list[str]]: ...
    def save_batch_job(self, job_id: str, provider: str, hashes: Sequence[str]) -> None: ...
    def delete_batch_job(self, job_id: str) -> None: ...
    def all_batch_jobs(self) -> list[BatchJob]: ...


class SyncEnds(Protocol):
    """A sync's two ends, and a snapshot's catch-up (``file_sync.FileSync``)."""

    def begin_files(
        self, source: str, *, workspace: str, fingerprint: str, force: bool
    ) -> FilesAtStart: ...
    def end_files(self, source: str, *, keep: set[str] | None, report: str) -> None: ...
    def catch_up(self, after: int, new_after: int | None, vectors: bool) -> CatchUp | None:
        """What an in-memory snapshot reads to catch up with the change feed."""
        ...


class Upkeep(Protocol):
    def copy_carryover(self, other: str) -> int:
        """Vectors, cache and batch jobs worth keeping, from another generation."""
        ...

    def checkpoint(self) -> None: ...
    def upkeep(self, changes_kept: int) -> None:
        """Work the writer does between tasks (outside any transaction): the change
        feed pruned to its last ``changes_kept`` entries, and the backend's own."""
        ...

    def versions(self) -> dict[str, str | None]: ...
    def integrity(self) -> str: ...
    def consistency(self) -> list[str]: ...
    def size_bytes(self) -> int: ...


class IndexStore(
    Connection,
    FilesAndChunks,
    ChangeFeed,
    CursorsAndSkips,
    KeywordIndex,
    Vectors,
    EmbeddingCache,
    SyncEnds,
    Upkeep,
    Protocol,
):
    """Everything a store does: the parts above on one connection."""
