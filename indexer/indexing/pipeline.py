"""Sync: the one place that combines discovery, chunking and the store.

For every file of the memory source: unchanged (mtime+size, then hash) files are
skipped cheaply; changed files are re-chunked and replaced in one transaction;
files no longer present are removed (a rename is a delete plus an add). A file that
cannot be read as UTF-8 text, is binary, or is over the size limit is skipped with a
reason that ``status`` shows; it never aborts the sync.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import TypeVar

from indexer.api import LastSync, ReindexResponse
from indexer.config import Config
from indexer.errors import FileUnreadable, FileVanished, RowRejected, index_damaged
from indexer.sources import files as source_files
from indexer.sources.chunking import CHUNKER_VERSION, chunk_markdown, split_lines
from indexer.sources.curated import curated_chunks, is_curated_root, strip_annotations
from indexer.sources.discovery import MEMORY_SOURCE, SourceFile, discover, shown
from indexer.sources.safefs import HARD_LINK_REASON, UNLISTED
from indexer.sources.text import index_text
from indexer.sources.tokenizer import TOKENIZER_NAME, TokenCounter, get_counter
from indexer.store import STORE_ERRORS, ChunkRow, FileState, IndexStore, NewFile

__all__ = [
    "FileUnreadable",
    "FileVanished",
    "SyncReport",
    "fingerprint",
    "rebuild_reason",
    "sync",
]

log = logging.getLogger(__name__)

FTS_VERSION = 2  # bump when index_text() or the FTS table changes
_BATCH_FILES = 256
_BATCH_SECONDS = 0.5
_GROUP_FILES = 32  # new files written in one statement at most (append_files)
_GROUP_CHUNKS = 256  # ... or until they have this many chunks

T = TypeVar("T")

Progress = Callable[[int, int], None]


def fingerprint(cfg: Config) -> dict[str, object]:
    """What the index rows depend on; a change means a rebuild."""
    return {
        "chunker": CHUNKER_VERSION,
        "tokens": cfg.chunking.tokens,
        "overlap": cfg.chunking.overlap,
        "tokenizer": TOKENIZER_NAME,
        "fts": FTS_VERSION,
        "days": cfg.query.timeZone,  # where a transcript chunk's day ends (transcript_rows)
        "provider": None,
        "model": None,
        "dims": 0,
    }


@dataclass
class SyncReport:
    """What a sync of the memory files did (``memindex index`` prints it)."""

    files: int = 0
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0
    chunksWritten: int = 0
    chunksRemoved: int = 0
    skipped: list[dict[str, str]] = field(default_factory=list)
    errors: list[dict[str, str]] = field(default_factory=list)
    rebuilt: str | None = None
    stopped: bool = False
    sessions: dict[str, object] | None = None
    embedding: dict[str, object] | None = None
    seconds: float = 0.0

    def to_json(self) -> ReindexResponse:
        """As ``reindex`` answers it (without the agent and provider state)."""
        out: ReindexResponse = asdict(self)  # type: ignore[assignment]  # the same keys
        return out


def rebuild_reason(
    store: IndexStore, cfg: Config, *, force: bool = False, provider_key: str | None = None
) -> str | None:
    """Why this index must be rebuilt into a new generation, or None.

    A change of chunking (or of the FTS layout) or of the embedding model, or
    ``--force``; an empty index is simply filled. (An index of another workspace is
    cleared in place by ``sync``: it must not answer meanwhile.) A damaged index
    (its settings cannot even be read) is rebuilt, forced or not."""
    try:
        old_fp = store.meta_get("fingerprint")
    except STORE_ERRORS as exc:
        if not index_damaged(exc):
            raise
        return f"the index is damaged ({exc})"
    if old_fp is None:
        return None
    if force:
        return "forced"
    if old_fp != json.dumps(fingerprint(cfg), sort_keys=True):
        return "chunking settings changed"
    old_key = store.meta_get("vectorKey")
    if provider_key is not None and old_key is not None and old_key != provider_key:
        return f"embedding model changed ({store.meta_get('vectorModel')} -> new)"
    return None


def sync(
    store: IndexStore,
    cfg: Config,
    *,
    force: bool = False,
    progress: Progress | None = None,
    counter: TokenCounter | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> SyncReport:
    """Bring the index in line with the files on disk.

    ``should_stop`` is checked between files: when it returns True the sync commits
    what it has done (every file is whole, old or new) and returns early."""
    t0 = time.monotonic()
    report = SyncReport()
    workspace = cfg.require_workspace().resolve()
    start = store.begin_files(
        MEMORY_SOURCE,
        workspace=str(workspace),
        fingerprint=json.dumps(fingerprint(cfg), sort_keys=True),
        force=force,
    )
    report.rebuilt, known = start.cleared, start.known
    odd: list[dict[str, str]] = []  # names that are not UTF-8, trees too deep
    files = discover(
        cfg, workspace, on_skip=lambda path, why: odd.append({"path": path, "reason": why})
    )
    report.files = len(files)
    count = counter or get_counter()

    _remove_gone(store, report, known, {f.path for f in files}, odd)  # first: one transaction
    pending: list[SourceFile] = []
    for f in files:
        old = known.get(f.path)
        if old is not None and f.mtime_ns == old.mtime_ns and f.size == old.size:
            report.unchanged += 1
            continue
        pending.append(f)

    skipped_now: set[str] = set()
    told = {(str(s["path"]), str(s["reason"])) for s in start.skipped}  # logged before
    was_skipped = {path for path, _ in told}
    _record_skips(store, report, odd, told, skipped_now)
    done = report.unchanged
    total = len(files)
    if progress:
        progress(done, total)
    batch_start = time.monotonic()
    in_batch = 0
    guard = _Guard(store, report, told, skipped_now)
    new: list[NewFile] = []  # new files read and chunked, written together
    with store.batch() as checkpoint:
        for f in pending:
            if should_stop is not None and should_stop():
                report.stopped = True
                break
            ok, got = guard(
                f.path, f.source,
                partial(_sync_one, store, cfg, f, known.get(f.path), report, skipped_now, count,
                        told, was_skipped),
            )  # fmt: skip
            if ok and got is not None:
                new.append(got)
                if len(new) >= _GROUP_FILES or sum(len(n.chunks) for n in new) >= _GROUP_CHUNKS:
                    _write_new(store, guard, report, new)
            in_batch += 1
            done += 1
            if in_batch >= _BATCH_FILES or time.monotonic() - batch_start > _BATCH_SECONDS:
                _write_new(store, guard, report, new)
                checkpoint()
                if progress:
                    progress(done, total)
                in_batch = 0
                batch_start = time.monotonic()
        _write_new(store, guard, report, new)
        store.end_files(
            MEMORY_SOURCE,
            keep=None if report.stopped else skipped_now,
            report=json.dumps(_last_sync(report)),
        )
    if progress:
        progress(total, total)
    report.seconds = round(time.monotonic() - t0, 3)
    return report


def _remove_gone(
    store: IndexStore,
    report: SyncReport,
    known: Mapping[str, FileState],
    present: set[str],
    odd: list[dict[str, str]],
) -> None:
    """Drop the files no longer there. A folder that is there but cannot be listed
    (its permissions) is not a folder emptied: what was indexed under it stays; a
    file that became a hard link is not read, and what was read of it before stays."""
    held = [str(o["path"]) for o in odd if str(o["reason"]).startswith(UNLISTED)]
    linked = {str(o["path"]) for o in odd if str(o["reason"]).startswith(HARD_LINK_REASON)}
    gone = [p for p in known if p not in present and p not in linked and not _held(p, held)]
    if gone:
        with store.transaction():
            for path in gone:
                report.chunksRemoved += store.delete_file(path)
                report.removed += 1


def _record_skips(
    store: IndexStore,
    report: SyncReport,
    odd: list[dict[str, str]],
    told: set[tuple[str, str]],
    skipped_now: set[str],
) -> None:
    """Record what the walk passed over (logged once per path and reason)."""
    if not odd:
        return
    with store.transaction():
        for item in odd:
            _log_skip(told, "skipped", item["path"], item["reason"])
            store.record_skip(item["path"], MEMORY_SOURCE, item["reason"])
            skipped_now.add(item["path"])
    report.skipped.extend(odd)


class _Guard:
    """Runs one file's work in a savepoint: its trouble never rolls back the batch.
    A value the store refuses, or a bug, is reported and the file skipped (its
    savepoint undid what it wrote); the store's own trouble (disk full, the server
    gone) fails the sync."""

    def __init__(
        self, store: IndexStore, report: SyncReport, told: set[tuple[str, str]], now: set[str]
    ) -> None:
        self.store, self.report, self.told, self.skipped_now = store, report, told, now

    def __call__(self, path: str, source: str, work: Callable[[], T]) -> tuple[bool, T | None]:
        try:
            with self.store.savepoint():
                return True, work()
        except RowRejected as exc:
            reason = str(exc)[:300]
            _log_skip(self.told, "not indexed", shown(path), reason)
        except STORE_ERRORS:
            raise
        except Exception as exc:
            log.exception("error indexing %s", path)
            reason = f"internal error: {type(exc).__name__}: {exc}"[:300]
        self.report.errors.append({"path": path, "reason": reason})
        self.skipped_now.add(shown(path))  # storable: the path may be what was refused
        self.store.record_skip(shown(path), source, reason)
        return False, None


def _write_new(store: IndexStore, guard: _Guard, report: SyncReport, new: list[NewFile]) -> None:
    """Write the new files read so far (``append_files``: one statement on
    PostgreSQL) and empty ``new``. When the store refuses one of them, or a bug
    strikes, each is written alone (its own savepoint) to find which."""
    files = new[:]
    new.clear()
    if len(files) > 1:
        try:
            with store.savepoint():
                report.chunksWritten += store.append_files(files)
            report.added += len(files)
            return
        except RowRejected:
            pass  # by one of them: each alone finds which
        except STORE_ERRORS:
            raise
        except Exception:  # a bug: each alone says for which file
            log.debug("writing %d new files at once failed; each alone", len(files), exc_info=True)
    for nf in files:
        ok, written = guard(nf.path, nf.source, partial(store.append_files, [nf]))
        if ok:
            report.chunksWritten += written or 0
            report.added += 1


def _index_text(text: str) -> str:
    """What a memory chunk is indexed for: its text without recall annotations."""
    return index_text(strip_annotations(text) if "<!--" in text else text)


def _held(path: str, folders: list[str]) -> bool:
    return any(path.startswith(f"{f}/") for f in folders)


def _log_skip(told: set[tuple[str, str]], what: str, path: str, reason: str) -> None:
    """A file skipped (or unreadable) is a warning the first time, or with a new
    reason; a sync finding it the same again (the daemon rescans every few minutes)
    logs it at debug level: ``status`` lists it all along."""
    level = logging.DEBUG if (path, reason) in told else logging.WARNING
    log.log(level, "%s %s: %s", what, path, reason)


def _last_sync(r: SyncReport) -> LastSync:
    return LastSync(
        at=time.time(),
        files=r.files,
        added=r.added,
        updated=r.updated,
        removed=r.removed,
        skipped=len(r.skipped),
        errors=len(r.errors),
    )


def _chunk_rows(f: SourceFile, text: str, cfg: Config, count: TokenCounter) -> list[ChunkRow]:
    """The file's chunks as rows: MEMORY.md and USER.md by their entries, the rest by
    the chunker; annotations (<!-- trigger: … -->) stay in the text, out of the
    keyword index."""
    tokens, overlap = cfg.chunking.tokens, cfg.chunking.overlap
    if f.source == MEMORY_SOURCE and is_curated_root(f.path):
        chunks = curated_chunks(text, count, tokens=tokens, overlap=overlap)
    else:
        chunks = chunk_markdown(text, count, tokens=tokens, overlap=overlap)
    return [
        ChunkRow(c.start_line, c.end_line, c.heading, c.hash, c.text, _index_text(c.text))
        for c in chunks
    ]


def _sync_one(
    store: IndexStore,
    cfg: Config,
    f: SourceFile,
    old: FileState | None,
    report: SyncReport,
    skipped_now: set[str],
    count: TokenCounter,
    told: set[tuple[str, str]],
    was_skipped: set[str],
) -> NewFile | None:
    """Index one file inside the caller's transaction (a savepoint keeps it atomic);
    a new file is not written but returned, to be written with others."""
    try:
        src = source_files.read_text(
            f.root, f.parts, cfg.limits.maxFileBytes, links=cfg.limits.allowHardLinks
        )
        text, state = src.text, FileState(src.sha256, src.mtime_ns, src.size)
    except FileVanished:
        if old is not None:
            report.chunksRemoved += store.delete_file(f.path)
            report.removed += 1
        return None
    except FileUnreadable as exc:
        _log_skip(told, "skipped", f.path, exc.reason)
        report.skipped.append({"path": f.path, "reason": exc.reason})
        skipped_now.add(f.path)
        store.record_skip(f.path, f.source, exc.reason)
        if old is not None and not exc.reason.startswith(HARD_LINK_REASON):
            # what was indexed is no longer what the file holds (a hard link's is:
            # it was read before it had another name, and it stays)
            report.chunksRemoved += store.delete_file(f.path)
            report.removed += 1
        return None
    except OSError as exc:  # keep the previous version; try again next sync
        reason = f"cannot read: {exc.strerror or exc}"
        _log_skip(told, "error reading", f.path, reason)
        report.errors.append({"path": f.path, "reason": reason})
        skipped_now.add(f.path)
        store.record_skip(f.path, f.source, reason)
        return None
    if f.path in was_skipped:  # skipped before: no longer
        store.clear_skip(f.path)
    if old is not None and old.hash == state.hash:
        store.touch_file(f.path, state.mtime_ns, state.size)
        report.unchanged += 1
        return None
    rows = _chunk_rows(f, text, cfg, count)
    lines = len(split_lines(text))
    if old is None:  # a new file: nothing of it to remove first
        return NewFile(f.path, f.source, state, lines, rows)
    removed, written = store.replace_file(f.path, f.source, state, lines, rows)
    report.chunksRemoved += removed
    report.chunksWritten += written
    report.updated += 1
    return None
