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
import json
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
from indexer.indexing.db_sessions import is_db_path, sync_db_sessions
from indexer.indexing.session_tail import (
    STEP_BYTES,
    messages_of,
    same_file,
    tail_or_skip,
)
from indexer.indexing.transcripts import SessionReport, transcript_failed, transcript_rows
from indexer.sources.archives import archive_session_id, is_archive_name
from indexer.sources.sessions import (
    SESSIONS_SOURCE,
    TranscriptFile,
    list_transcripts,
    read_complete_lines,
)
from indexer.sources.text import index_text
from indexer.sources.tokenizer import TokenCounter, get_counter
from indexer.store import STORE_ERRORS, FileState, IndexStore, SessionCursor
from indexer.store.openclaw_db import session_facts

__all__ = ["Quiet", "SessionReport", "pending_delta", "sync_sessions", "transcript_rows"]

log = logging.getLogger(__name__)


class Quiet:
    """When the daemon last saw each transcript's size change (monotonic time): a
    delta is quiet once the daemon has seen no change for ``idleFlushMs``."""

    def __init__(self) -> None:
        self._seen: dict[str, tuple[int, int, float]] = {}  # path -> (inode, size, since)
        self._tailed: dict[str, tuple[int, int]] = {}  # path -> (inode, size) of its tail

    def quiet_for(self, f: TranscriptFile, now: float) -> float:
        """Seconds this file has been unchanged as far as the daemon knows (a file
        seen for the first time, or at a new size, starts the count)."""
        prev = self._seen.get(f.display)
        if prev is not None and prev[:2] == (f.ino, f.size):
            return now - prev[2]
        self._seen[f.display] = (f.ino, f.size, now)
        return 0.0

    def new_tail(self, f: TranscriptFile, nbytes: int) -> bool:
        """Whether the file has a tail to index (``nbytes`` past its cursor), or had
        one indexed and changed since (emptied: the old tail must go)."""
        if not nbytes and f.display not in self._tailed:
            return False
        return self._tailed.get(f.display) != (f.ino, f.size)

    def tail_done(self, f: TranscriptFile, nbytes: int) -> None:
        if nbytes:
            self._tailed[f.display] = (f.ino, f.size)
        else:
            self._tailed.pop(f.display, None)

    def forget(self, keep: set[str]) -> None:
        for seen in (self._seen, self._tailed):
            for path in [p for p in seen if p not in keep]:
                del seen[path]


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
    """Index what is new in every transcript. With ``due_only`` (the watcher), a delta
    is indexed only once it passes ``deltaBytes``/``deltaMessages`` or has been quiet
    for ``idleFlushMs`` (``quiet``: what the daemon saw; without it, every delta
    seen is new); ``memindex index`` and ``reindex`` index all. ``should_stop`` is
    asked between slices of at most ``STEP_BYTES``; past ``budget_s`` seconds the
    call returns with ``more`` set."""
    report = SessionReport()
    start = time.monotonic()
    deadline = None if budget_s is None else start + budget_s
    quiet = quiet if quiet is not None else Quiet()
    count = counter or get_counter()
    # OpenClaw's database first, with at most half the time: neither source waits
    # behind the other's backlog (each says ``more`` when it has work left)
    odd: list[tuple[str, str]] = []
    db_error: TranscriptDbError | None = None
    if should_stop is None or not should_stop():
        half = None if budget_s is None else start + budget_s / 2
        stop = should_stop if half is None else _until(half, should_stop, report)
        try:
            sync_db_sessions(store, cfg, report, count, stop, odd)
        except TranscriptDbError as exc:  # the files go on; the error is the sync's
            db_error = exc
    directory = cfg.sessions_dir()
    files = list_transcripts(
        directory,
        cfg.sessions.includeRotated,
        on_skip=lambda p, why: odd.append((p, why)),
        links=cfg.limits.allowHardLinks,
    )
    forgotten, registered = _db_facts(store, cfg, report)
    report.forgotten |= forgotten
    if forgotten:  # `openclaw memory forget`: as if the file were gone (its rows go)
        files = [f for f in files if _session_id(f.name, registered) not in forgotten]
    report.files = len(files)
    store.sync_skips(SESSIONS_SOURCE, odd)  # what cannot be indexed: status shows it
    for path, why in odd:
        report.errors.append({"path": path, "reason": why})
    now = time.monotonic()
    quiet.forget({f.display for f in files})
    with store.transaction():
        _follow_renames(store, files, report)
    present = {f.display for f in files}
    cursors = store.session_cursors()  # read once: deleting gone paths leaves the rest as is
    indexed = set(store.file_states(SESSIONS_SOURCE))
    known_paths = indexed | set(cursors)
    tails = indexed - set(cursors)  # rows and no cursor: a tail (from before a restart too)
    gone = [p for p in known_paths if p not in present and not is_db_path(p)]
    report.cleared.extend(gone)
    if gone:
        with store.transaction():
            for p in gone:
                store.delete_session(p)
                report.removed += 1
    for f in files:
        if should_stop is not None and should_stop():
            break
        if deadline is not None and time.monotonic() >= deadline:
            report.more = True
            break
        cur = cursors.get(f.display)
        if due_only and not is_archive_name(f.name):  # an archive is complete: due
            try:
                nbytes, nlines = pending_delta(f, cur)
            except (OSError, MemindexError):
                continue  # gone or replaced since the listing: the next sync sees it
            if not _due(cfg, nbytes, nlines, quiet.quiet_for(f, now)):
                if nbytes:
                    report.deferred += 1
                emptied = not nbytes and cur is None and f.display in tails
                tail = quiet.new_tail(f, nbytes) or emptied
                if tail and tail_or_skip(store, cfg, f, cur, report, count):
                    quiet.tail_done(f, nbytes)  # a failed one is tried again next pass
                continue
        try:
            stop = should_stop
            if deadline is not None:
                stop = _until(deadline, should_stop, report)
            _index_file(store, cfg, f, cur, report, count, stop)
            report.cleared.append(f.display)
        except FileVanished:
            continue  # vanished mid-sync: the next sync drops its rows
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
    if db_error is not None:
        raise db_error
    return report


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


_FORGOTTEN_KEY = "openclaw.forgotten"  # the tombstones last read, kept in the index


def _db_facts(
    store: IndexStore, cfg: Config, report: SessionReport
) -> tuple[set[str], dict[str, tuple[str, str]]]:
    """From OpenClaw's agent database: the forgotten session ids and the registered
    archives (name -> session id, key). A forgotten session stays forgotten while the
    database cannot be read: the ids last read are kept in the index's meta."""
    kept = set(json.loads(store.meta_get(_FORGOTTEN_KEY) or "[]"))
    try:
        forgotten, registered = session_facts(cfg.transcript_db(), cfg.agent_name)
    except TranscriptDbError as exc:
        report.errors.append({"path": str(cfg.transcript_db()), "reason": exc.message})
        return kept, {}
    if not forgotten <= kept:
        with store.transaction():
            store.meta_set(_FORGOTTEN_KEY, json.dumps(sorted(forgotten | kept)))
    return forgotten | kept, registered


def _session_id(name: str, registered: dict[str, tuple[str, str]]) -> str:
    got = registered.get(name)
    return got[0] if got else archive_session_id(name)


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
