"""Copy an agent's SQLite index into another store (``memindex migrate``).

What is copied is what the writer would otherwise pay for again: every file and
transcript with its chunks (under new ids: ids are the destination's to give), each
chunk's vector (found by the chunk's hash, as the embedding cache finds it), the
embedding cache, transcript cursors, skipped files, open batch jobs and the meta that
ties the index to its workspace, settings and model. The store's own bookkeeping
(versions, the change feed, the id high-water mark) starts fresh in the destination.

The source is read in one snapshot, so a daemon still writing it does no harm: the
copy is of one committed state. The destination is written in batches into a
generation nobody reads until the caller publishes it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from indexer.errors import IndexCorrupt, InvalidParams, index_damaged
from indexer.sources.discovery import shown
from indexer.sources.text import index_text
from indexer.store.base import IndexStore
from indexer.store.records import INDEX_ID, ChunkRow, FileState
from indexer.store.sqlite.store import Store

if TYPE_CHECKING:
    from indexer.config import Config
    from indexer.store.backend import SqliteBackend
    from indexer.store.postgres.backend import PostgresBackend

__all__ = ["TransferReport", "copy_cache", "copy_index", "migrate_agent"]

# Meta the destination keeps for itself (see the module docstring).
_OWN_META = frozenset(
    {"chunksVersion", "vectorsVersion", "chunkIdHigh", "changesPrunedTo", "vectorDims"}
    | {INDEX_ID}  # each index its own (IndexStore.identity)
)
_FILES_PER_COMMIT = 200
_VECTORS_PER_READ = 1000


@dataclass
class TransferReport:
    files: int = 0
    chunks: int = 0
    vectors: int = 0
    cache: int = 0
    cursors: int = 0
    skipped: int = 0
    batch_jobs: int = 0
    orphans: int = 0  # chunks of no file row (an inconsistent source): not copied

    def to_json(self) -> dict[str, int]:
        return {
            "files": self.files,
            "chunks": self.chunks,
            "vectors": self.vectors,
            "cacheEntries": self.cache,
            "cursors": self.cursors,
            "skipped": self.skipped,
            "batchJobs": self.batch_jobs,
            "orphans": self.orphans,
        }


def migrate_agent(
    cfg: Config,
    source: SqliteBackend,
    dest: PostgresBackend,
    *,
    replace: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> TransferReport:
    """Copy the agent's SQLite index (``source``) into its PostgreSQL database
    (``dest``; both made by the composition root, ``engine.migrate``) and publish it
    there. Holds the agent's writer lock in the database throughout, so a daemon
    already writing the agent there makes this fail rather than race it."""
    if not source.exists():
        raise InvalidParams(
            f"agent {cfg.agent_name} has no SQLite index at {source.where}: nothing to migrate"
        )
    with Store(source.index_path, readonly=True) as src, dest.open() as live:
        held = len(live.file_states())
        if held and not replace:
            raise InvalidParams(
                f"agent {cfg.agent_name} already has an index in {dest.where} ({held} files): "
                "pass --replace to overwrite it with the SQLite copy"
            )
        with dest.rebuild_lock():
            for old in dest.abandoned():  # a migration or rebuild killed half-way
                dest.discard(old)
            fresh = dest.create()
            try:
                report = copy_index(src, fresh, progress=progress)
                dest.publish(fresh)
            except BaseException as exc:
                generation = fresh.generation
                fresh.close()
                dest.discard(generation)
                if index_damaged(exc) and not isinstance(exc, IndexCorrupt):
                    raise IndexCorrupt(
                        f"the SQLite index {source.where} is damaged ({exc}); nothing was "
                        "copied: 'memindex index --force' builds it anew from your files, "
                        "then migrate again"
                    ) from exc
                raise
            fresh.close()
        dest.cleanup()
    return report


def copy_index(
    src: Store, dst: IndexStore, *, progress: Callable[[int, int], None] | None = None
) -> TransferReport:
    """Copy ``src`` (an open SQLite index) into ``dst`` (an empty generation)."""
    report = TransferReport()
    with src.read_snapshot():
        # vectors need sqlite-vec to be read: without it they are left to be embedded
        dims = src.vector_dims() if src.vec_version is not None else None
        with dst.batch() as commit:
            for key, value in src.export_meta():
                if key not in _OWN_META:
                    dst.meta_set(key, value)
            _copy_files(src, dst, report, commit, progress)
            for c in src.session_cursors().values():
                dst.put_session_cursor(c)
                report.cursors += 1
            for s in src.skipped():
                dst.record_skip(shown(s["path"]), s["source"], s["reason"])
                report.skipped += 1
            for job_id, provider, hashes in src.export_batch_jobs():
                dst.save_batch_job(job_id, provider, hashes)
                report.batch_jobs += 1
            commit()
            report.cache = copy_cache(src, dst, commit)
            if dims is not None and dst.vec_version is not None:
                dst.ensure_vector_table(dims)
                report.vectors = _copy_vectors(src, dst, commit)
    return report


def _copy_files(
    src: Store,
    dst: IndexStore,
    report: TransferReport,
    commit: Callable[[], None],
    progress: Callable[[int, int], None] | None,
) -> None:
    files = src.export_files()
    done: set[str] = set()
    for path, exported in src.export_chunks():
        chunks = [
            ChunkRow(a, b, x, h, t, index_text(t), m, w, o) for a, b, x, h, t, m, w, o in exported
        ]
        if path not in files:
            report.orphans += len(chunks)
            continue
        _put_file(dst, path, files[path], chunks, report)
        done.add(path)
        if len(done) % _FILES_PER_COMMIT == 0:
            commit()
            if progress:
                progress(len(done), len(files))
    for path, entry in files.items():  # files with no chunks (empty, or all blank)
        if path not in done:
            _put_file(dst, path, entry, [], report)
    if progress:
        progress(len(files), len(files))


def _put_file(
    dst: IndexStore,
    path: str,
    entry: tuple[str, FileState, int],
    chunks: list[ChunkRow],
    report: TransferReport,
) -> None:
    source, state, lines = entry
    report.chunks += dst.append_chunks(path, source, state, lines, chunks)
    report.files += 1


def copy_cache(src: Store, dst: IndexStore, commit: Callable[[], None]) -> int:
    """Every embedding cache entry of ``src`` into ``dst`` (``commit`` after each page,
    as ``dst.batch()`` yields it); returns how many."""
    n = 0
    for provider, dims, entries in src.export_cache():
        for part in _pages(entries, _VECTORS_PER_READ):
            dst.cache_put(provider, dims, part)
            n += len(part)
            commit()
    return n


def _copy_vectors(src: Store, dst: IndexStore, commit: Callable[[], None]) -> int:
    """Give each destination chunk the source's vector for its hash."""
    n = 0
    after = 0
    while True:
        pending = dst.pending_chunks(_VECTORS_PER_READ, after)
        if not pending:
            return n
        after = pending[-1][0]
        by_hash = src.vectors_by_hash(sorted({h for _, h, _ in pending}))
        rows = [(i, by_hash[h]) for i, h, _ in pending if h in by_hash]
        if rows:
            dst.put_vectors(rows)
            n += len(rows)
            commit()


def _pages(items: Iterator[Any], size: int) -> Iterator[list[Any]]:
    page: list[Any] = []
    for item in items:
        page.append(item)
        if len(page) == size:
            yield page
            page = []
    if page:
        yield page
