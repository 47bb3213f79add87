"""Sync for session transcripts: cursors, deltas, rotation, truncation.

A cursor per transcript remembers how many bytes (and JSONL lines) are indexed. The
file is known by (device, inode) plus a hash of its first bytes, so:

* growth: only the new complete lines are read and appended as new chunks;
* a partial last line waits for its newline;
* truncation (size below the cursor) or a replaced file: its rows are dropped and it
  is read again from the start;
* rotation (``x.jsonl`` renamed to ``x.jsonl.reset.<ts>``, a new ``x.jsonl`` begun):
  the cursor and rows follow the inode to the new name and the rotated file's unread
  tail is still indexed; the new file starts from zero;
* malformed lines are skipped and counted (logged once per file).

Rows and cursor move in one transaction, so a crash re-reads at most one delta.

The daemon commits a delta (chunks cut from the cursor on, the cursor moved past
it) once it is large enough or has been quiet for ``idleFlushMs`` — quiet as the
daemon saw it (``Quiet``: the size it last saw and since when), never by the file's
mtime alone, which a clock stepped back or a file from a host whose clock runs ahead
puts in the future. Until then the delta is a *tail*: indexed at once (searchable
within the watcher's debounce), its chunks replaced each time it grows and when it
is committed (``drop_chunks_after``); the thresholds size the committed chunks, they
do not delay search. A call may be given a time
budget: a large transcript is then read in slices (``SessionReport.more``), so the
one writer turns to memory files and to shutdown in between.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from collections.abc import Callable

from indexer.config import Config
from indexer.errors import (
    FileUnreadable,
    FileVanished,
    MemindexError,
    RowRejected,
    TranscriptDbError,
)
from indexer.indexing.archive_sync import index_archive
from indexer.indexing.db_sessions import AgentDatabase, db_facts, session_id_of
from indexer.indexing.session_tail import (
    STEP_BYTES,
    messages_of,
    same_file,
    tail_or_skip,
)
from indexer.indexing.transcripts import (
    Quiet,
    SessionReport,
    SyncRun,
    TranscriptSource,
    transcript_failed,
    transcript_rows,
)
from indexer.sources.archives import is_archive_name
from indexer.sources.sessions import (
    SESSIONS_SOURCE,
    TranscriptFile,
    list_transcripts,
    read_complete_lines,
)
from indexer.sources.text import index_text
from indexer.sources.tokenizer import TokenCounter, get_counter
from indexer.store import STORE_ERRORS, FileState, IndexStore, SessionCursor

__all__ = [
    "SOURCES",
    "Quiet",
    "SessionReport",
    "TranscriptFiles",
    "pending_delta",
    "sync_sessions",
    "transcript_rows",
]

log = logging.getLogger(__name__)


def pending_delta(f: TranscriptFile, cur: SessionCursor | None) -> tuple[int, int]:
    """(unindexed bytes, unindexed complete lines) of a transcript; cheap."""
    start = cur.committed if cur and (cur.dev, cur.ino) == (f.dev, f.ino) else 0
    if f.size <= start:
        return (0, 0) if f.size == start else (f.size, 1)
    fd = f.open()
    try:
        data = os.pread(fd, min(f.size - start, 4 * 1024 * 1024), start)
    finally:
        os.close(fd)
    return f.size - start, data.count(b"\n")


def _due(cfg: Config, nbytes: int, nlines: int, quiet_s: float) -> bool:
    if nbytes == 0:
        return False
    s = cfg.sessions
    if nbytes >= s.deltaBytes or nlines >= s.deltaMessages:
        return True
    return quiet_s * 1000 >= s.idleFlushMs


def sync_sessions(
    store: IndexStore,
    cfg: Config,
    *,
    due_only: bool = False,
    counter: TokenCounter | None = None,
    should_stop: Callable[[], bool] | None = None,
    quiet: Quiet | None = None,
    budget_s: float | None = None,
) -> SessionReport:
    """Index what is new in every transcript of every source (``SOURCES``). With
    ``due_only`` (the watcher), a delta is indexed only once it passes
    ``deltaBytes``/``deltaMessages`` or has been quiet for ``idleFlushMs``
    (``quiet``: what the daemon saw; without it, every delta seen is new);
    ``memindex index`` and ``reindex`` index all. ``should_stop`` is asked between
    slices of at most ``STEP_BYTES``; past ``budget_s`` seconds the call returns with
    ``more`` set. Each source has its share of the time (OpenClaw's database at most
    half, the files the rest), so neither waits behind the other's backlog; a
    source's error (its database unreadable) is raised after the others ran."""
    report = SessionReport()
    start = time.monotonic()
    run = SyncRun(
        store,
        cfg,
        report,
        counter or get_counter(),
        quiet if quiet is not None else Quiet(),
        due_only,
        [],
    )
    error: TranscriptDbError | None = None
    for n, source in enumerate(SOURCES, 1):
        if should_stop is not None and should_stop():
            break
        stop = should_stop
        if budget_s is not None:
            stop = _until(start + budget_s * n / len(SOURCES), should_stop, report)
        try:
            source.sync(run, stop)
        except TranscriptDbError as exc:  # the other sources go on; the error is the sync's
            error = error or exc
    else:  # every source looked: what they passed over (status shows the skips)
        store.sync_skips(SESSIONS_SOURCE, run.skips)
        if not due_only:  # a full pass (start-up, index, reindex), not the watcher's
            _drop_unowned(store, report)
    if error is not None:
        raise error
    return report


def _drop_unowned(store: IndexStore, report: SessionReport) -> None:
    """Transcript rows under a path no source owns (a source no longer listed, or a
    path an older version wrote): no sync would ever remove them, and memory_get
    could not open their citations. Such rows come only from another version or
    configuration, so a full pass looks for them; the watcher's frequent passes do
    not read every path again for it."""
    known = set(store.file_states(SESSIONS_SOURCE)) | set(store.session_cursors())
    stray = sorted(p for p in known if not any(s.owns(p) for s in SOURCES))
    if stray:
        with store.transaction():
            for p in stray:
                store.delete_session(p)
        report.removed += len(stray)
        report.cleared.extend(stray)
        log.warning("transcript rows no source owns were removed: %s", ", ".join(stray[:5]))


class TranscriptFiles:
    """The sessions folder as a ``TranscriptSource``: JSONL transcripts, rotated
    ones and the archives OpenClaw leaves of deleted sessions, shown as
    ``sessions/<file name>``."""

    name = "files"

    def owns(self, path: str) -> bool:
        prefix = SESSIONS_SOURCE + "/"
        return path.startswith(prefix) and "/" not in path[len(prefix) :]

    def sync(self, run: SyncRun, should_stop: Callable[[], bool] | None) -> None:
        store, cfg, report, count = run.store, run.cfg, run.report, run.count
        odd = run.skips
        files = list_transcripts(
            cfg.sessions_dir(),
            cfg.sessions.includeRotated,
            on_skip=lambda p, why: odd.append((p, why)),
            links=cfg.limits.allowHardLinks,
        )
        forgotten, registered = db_facts(store, cfg, report)
        report.forgotten |= forgotten
        if forgotten:  # `openclaw memory forget`: as if the file were gone (its rows go)
            files = [f for f in files if session_id_of(f.name, registered) not in forgotten]
        report.files = len(files)
        for path, why in odd:
            report.errors.append({"path": path, "reason": why})
        now = time.monotonic()
        run.quiet.forget({f.display for f in files})
        with store.transaction():
            _follow_renames(store, files, report)
        present = {f.display for f in files}
        cursors = store.session_cursors()  # read once: deleting gone paths leaves the rest
        indexed = set(store.file_states(SESSIONS_SOURCE))
        known_paths = indexed | set(cursors)
        tails = indexed - set(cursors)  # rows and no cursor: a tail (from before a restart too)
        gone = [p for p in known_paths if p not in present and self.owns(p)]
        report.cleared.extend(gone)
        if gone:
            with store.transaction():
                for p in gone:
                    store.delete_session(p)
                    report.removed += 1
        for f in files:
            if should_stop is not None and should_stop():
                break
            cur = cursors.get(f.display)
            if run.due_only and not is_archive_name(f.name):  # an archive is complete: due
                try:
                    nbytes, nlines = pending_delta(f, cur)
                except (OSError, MemindexError):
                    continue  # gone or replaced since the listing: the next sync sees it
                if not _due(cfg, nbytes, nlines, run.quiet.quiet_for(f, now)):
                    if nbytes:
                        report.deferred += 1
                    emptied = not nbytes and cur is None and f.display in tails
                    tail = run.quiet.new_tail(f, nbytes) or emptied
                    if tail and tail_or_skip(store, cfg, f, cur, report, count):
                        run.quiet.tail_done(f, nbytes)  # a failed one is tried again next pass
                    continue
            _index_one(store, cfg, f, cur, report, count, should_stop)


def _index_one(
    store: IndexStore,
    cfg: Config,
    f: TranscriptFile,
    cur: SessionCursor | None,
    report: SessionReport,
    count: TokenCounter,
    should_stop: Callable[[], bool] | None,
) -> None:
    """One transcript file's delta; its trouble is its own (named in the report),
    the index's is the sync's."""
    try:
        _index_file(store, cfg, f, cur, report, count, should_stop)
        report.cleared.append(f.display)
    except FileVanished:
        pass  # vanished mid-sync: the next sync drops its rows
    except FileUnreadable as exc:  # replaced by a symlink, FIFO or device meanwhile
        report.errors.append({"path": f.display, "reason": exc.reason})
    except OSError as exc:
        report.errors.append({"path": f.display, "reason": str(exc.strerror or exc)})
    except RowRejected as exc:  # a value the store cannot hold: the others go on
        transcript_failed(f.display, exc, report)
    except STORE_ERRORS:
        raise  # the index itself is in trouble: the sync fails
    except Exception as exc:  # this transcript's trouble only: the others go on
        transcript_failed(f.display, exc, report)


def _until(
    deadline: float, should_stop: Callable[[], bool] | None, report: SessionReport
) -> Callable[[], bool]:
    """``should_stop`` that also stops at ``deadline`` (and says there is more)."""

    def stop() -> bool:
        if should_stop is not None and should_stop():
            return True
        if time.monotonic() >= deadline:
            report.more = True
            return True
        return False

    return stop


def _follow_renames(store: IndexStore, files: list[TranscriptFile], report: SessionReport) -> None:
    """Move cursors (and rows) whose inode now lives under another name."""
    cursors = store.session_cursors()
    by_inode = {(c.dev, c.ino): c for c in cursors.values()}
    for f in files:
        c = by_inode.get((f.dev, f.ino))
        if c is None or c.path == f.display or not same_file(c, f):
            continue
        target = cursors.get(f.display)
        if target is not None and target.path != c.path:
            store.delete_session(f.display)  # a stale cursor sits at the new name
        store.rename_path(c.path, f.display, index_text)
        report.rotated += 1
        log.info("transcript %s rotated to %s", c.path, f.display)
        cursors = store.session_cursors()


def _index_file(
    store: IndexStore,
    cfg: Config,
    f: TranscriptFile,
    cur: SessionCursor | None,
    report: SessionReport,
    count: TokenCounter,
    should_stop: Callable[[], bool] | None = None,
) -> None:
    if cur is not None and not same_file(cur, f):
        with store.transaction():
            store.delete_session(f.display)
        report.restarted += 1
        log.info("transcript %s was truncated or replaced: reading it again", f.display)
        cur = None
    if is_archive_name(f.name):
        index_archive(store, cfg, f, cur, report, count, should_stop)
        return
    committed = cur.committed if cur else 0
    lines_done = cur.lines if cur else 0
    malformed = cur.malformed if cur else 0
    wrote = False
    while committed < f.size:
        if wrote and should_stop is not None and should_stop():
            break  # the cursor is committed: the rest comes next time
        fd = f.open()
        try:
            raw_lines, end, head = read_complete_lines(fd, committed, STEP_BYTES)
        finally:
            os.close(fd)
        if end == committed:
            break  # only a partial line is left
        msgs, bad = messages_of(raw_lines, lines_done, f.display, warn=malformed == 0)
        malformed += bad
        report.malformed += bad
        rows = transcript_rows(msgs, cfg, count)
        first_lines = lines_done
        lines_done += len(raw_lines)
        head_len = min(len(head), end)
        cursor = SessionCursor(
            f.display,
            f.dev,
            f.ino,
            end,
            lines_done,
            hashlib.sha256(head[:head_len]).hexdigest(),
            head_len,
            malformed,
        )
        state = FileState(f"{f.dev}:{f.ino}:{end}", f.mtime_ns, f.size)
        with store.transaction():
            if not wrote:  # the tail indexed before the cursor came here: cut again now
                store.drop_chunks_after(f.display, first_lines)
            report.chunksWritten += store.append_chunks(
                f.display, SESSIONS_SOURCE, state, lines_done, rows
            )
            store.put_session_cursor(cursor)
        report.messages += len(msgs)
        committed = end
        wrote = True
    if wrote:
        report.indexed += 1


# OpenClaw's agent database first (at most half the time), then the files.
SOURCES: tuple[TranscriptSource, ...] = (AgentDatabase(), TranscriptFiles())
