"""Sync for session transcripts: every source (``SOURCES``) through one driver.

``sync_source`` asks a ``TranscriptSource`` what it holds, removes the index's rows
of what it no longer lists, and for each transcript that changed reads it past the
index's cursor (from the start when what is indexed is not what it holds), writing
each piece's chunks and the cursor after it in one transaction, so a crash re-reads
at most one piece. One transcript's trouble is its own (named in the report, its
cursor left where it was, tried again next sync); the index's fails the sync.
``sync_sessions`` runs every source with its share of the time. The sources:
``session_files`` (the sessions folder: JSONL, rotations, tails, archives) and
``db_sessions`` (OpenClaw's agent database).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import time
from collections.abc import Callable

from indexer.config import Config
from indexer.errors import FileUnreadable, FileVanished, RowRejected, TranscriptDbError
from indexer.indexing.transcripts.db_sessions import AgentDatabase
from indexer.indexing.transcripts.session_files import TranscriptFiles
from indexer.indexing.transcripts.source import (
    Change,
    Forgotten,
    Quiet,
    SessionReport,
    SyncRun,
    Transcript,
    TranscriptSource,
    transcript_failed,
    transcript_rows,
)
from indexer.sources.tokenizer import TokenCounter, get_counter
from indexer.sources.transcripts.sessions import SESSIONS_SOURCE
from indexer.store import STORE_ERRORS, IndexStore, SessionCursor

__all__ = [
    "SOURCES",
    "Quiet",
    "SessionReport",
    "sync_sessions",
    "sync_source",
    "transcript_rows",
]

log = logging.getLogger(__name__)


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
            sync_source(source, run, stop)
        except TranscriptDbError as exc:  # the other sources go on; the error is the sync's
            error = error or exc
    else:  # every source looked: what they passed over (status shows the skips)
        store.sync_skips(SESSIONS_SOURCE, [*run.skips, *_read_in_part(store, report)])
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
    _remove(store, stray, report)
    if stray:
        log.warning("transcript rows no source owns were removed: %s", ", ".join(stray[:5]))


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


def sync_source(
    source: TranscriptSource, run: SyncRun, should_stop: Callable[[], bool] | None
) -> None:
    """Bring the index in step with one source (the module doc)."""
    store, report = run.store, run.report
    listing = source.listing(run)
    try:
        cursors = store.session_cursors()
        known = set(store.file_states(SESSIONS_SOURCE)) | set(cursors)
        listed = {t.display for t in listing.transcripts} | listing.held
        if listing.complete:
            _remove(store, sorted(p for p in known if p not in listed and source.owns(p)), report)
        for t in listing.transcripts:
            if should_stop is not None and should_stop():
                break
            _sync_one(source, run, t, cursors.get(t.display), should_stop)
    finally:
        listing.close()


def _sync_one(
    source: TranscriptSource,
    run: SyncRun,
    t: Transcript,
    cur: SessionCursor | None,
    should_stop: Callable[[], bool] | None,
) -> None:
    """One transcript past its cursor; its trouble is its own (named in the report),
    the index's is the sync's."""
    store, report = run.store, run.report
    try:
        change = source.changed(run, t, cur)
        if change is Change.TAIL:
            _write_tail(source, run, t, cur)
            return
        if change is Change.NONE:
            return
        if change is Change.RESTART:
            with store.transaction():
                store.delete_session(t.display)
            report.restarted += 1
            cur = None
        malformed = cur.malformed if cur is not None else 0
        wrote = False
        with contextlib.closing(source.read(run, t, cur, should_stop)) as pieces:
            for piece in pieces:
                msgs, bad = source.render(t, piece, warn=malformed == 0)
                malformed += bad
                rows = transcript_rows(msgs, run.cfg, run.count, heading=t.heading)
                cursor = dataclasses.replace(piece.cursor, malformed=malformed)
                with store.transaction():
                    if piece.cut is not None:  # the tail indexed past the cursor: cut again
                        store.drop_chunks_after(t.display, piece.cut)
                    report.chunksWritten += store.append_chunks(
                        t.display, SESSIONS_SOURCE, piece.state, piece.lines, rows
                    )
                    store.put_session_cursor(cursor)
                report.messages += len(msgs)
                report.malformed += bad
                wrote = True
        if wrote:
            report.indexed += 1
        report.cleared.append(t.display)
    except Forgotten:
        _remove(store, [t.display], report)
    except FileVanished:
        pass  # vanished mid-sync: the next sync drops its rows
    except FileUnreadable as exc:  # replaced by a symlink, FIFO or device meanwhile
        report.errors.append({"path": t.display, "reason": exc.reason})
    except OSError as exc:
        report.errors.append({"path": t.display, "reason": str(exc.strerror or exc)})
    except RowRejected as exc:  # a value the store cannot hold: the others go on
        transcript_failed(t.display, exc, report)
    except STORE_ERRORS:
        raise  # the index itself is in trouble: the sync fails
    except Exception as exc:  # this transcript's trouble only: the others go on
        transcript_failed(t.display, exc, report)


def _write_tail(
    source: TranscriptSource, run: SyncRun, t: Transcript, cur: SessionCursor | None
) -> None:
    """A transcript's uncommitted lines indexed in place of the tail indexed before
    them; the cursor stays where it is (the next commit cuts them again)."""
    store = run.store
    try:
        tail = source.tail(run, t, cur)
    except (FileVanished, FileUnreadable, OSError):
        return  # the next sync sees what became of it
    if tail is None:
        return  # truncated or replaced: read again from the start when due
    with store.transaction():
        if tail.msgs is None and cur is None:  # nothing committed: the path leaves the index
            store.delete_session(t.display)
        else:
            store.drop_chunks_after(t.display, tail.cut)
        if tail.msgs is not None and tail.state is not None:
            rows = transcript_rows(tail.msgs, run.cfg, run.count, heading=t.heading)
            run.report.chunksWritten += store.append_chunks(
                t.display, SESSIONS_SOURCE, tail.state, tail.cut, rows
            )
            run.report.tails += 1
    source.tailed(run, t, tail)


def _remove(store: IndexStore, paths: list[str], report: SessionReport) -> None:
    """Transcripts gone from their source (or forgotten) leave the index."""
    report.cleared.extend(paths)
    if not paths:
        return
    with store.transaction():
        for p in paths:
            store.delete_session(p)
    report.removed += len(paths)


# OpenClaw's agent database first (at most half the time), then the files.
SOURCES: tuple[TranscriptSource, ...] = (AgentDatabase(), TranscriptFiles())


_PARTIAL_KEY = "sessions.readInPart"  # archives indexed only in part: path -> why


def _read_in_part(store: IndexStore, report: SessionReport) -> list[tuple[str, str]]:
    """The archives read only in part, this sync's and earlier ones' still indexed
    (an archive is read once: its trouble is kept in the index's meta so ``status``
    names it for as long as what was read of it is searchable)."""
    kept: dict[str, str] = json.loads(store.meta_get(_PARTIAL_KEY) or "{}")
    now = {**kept, **report.partial}
    now = {p: why for p, why in now.items() if store.file_lines(p) is not None}
    if now != kept:
        with store.transaction():
            store.meta_set(_PARTIAL_KEY, json.dumps(now, sort_keys=True))
    return [(p, f"read in part: {why}") for p, why in sorted(now.items())]
