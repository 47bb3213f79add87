"""The sessions folder as a ``TranscriptSource``: JSONL transcripts, rotated ones and
the compressed archives OpenClaw leaves of deleted sessions, shown as
``sessions/<file name>``.

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

The daemon commits a delta (chunks cut from the cursor on, the cursor moved past
it) once it is large enough or has been quiet for ``idleFlushMs`` — quiet as the
daemon saw it (``Quiet``: the size it last saw and since when), never by the file's
mtime alone, which a clock stepped back or a file from a host whose clock runs ahead
puts in the future. Until then the delta is a *tail*: indexed at once (searchable
within the watcher's debounce), its chunks replaced each time it grows and when it
is committed (``Piece.cut``); the thresholds size the committed chunks, they do not
delay search. An archive never grows: it is read once (``archive_sync``).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import cast

from indexer.config import Config
from indexer.errors import MemindexError, TranscriptsUnavailable
from indexer.indexing.transcripts.archive_sync import archive_pieces
from indexer.indexing.transcripts.db_sessions import db_facts
from indexer.indexing.transcripts.session_tail import (
    STEP_BYTES,
    cursor_mark,
    messages_of,
    read_tail,
    same_file,
)
from indexer.indexing.transcripts.source import (
    Change,
    Listing,
    Piece,
    SessionReport,
    SyncRun,
    Tail,
    Transcript,
    indexed_from,
)
from indexer.sources.safefs import HARD_LINK_REASON
from indexer.sources.text import index_text
from indexer.sources.transcripts.archives import is_archive_name, session_ids_of
from indexer.sources.transcripts.line_reads import read_complete_lines
from indexer.sources.transcripts.messages import Messages
from indexer.sources.transcripts.sessions import (
    SESSIONS_SOURCE,
    TranscriptFile,
    list_transcripts,
)
from indexer.store import FileState, IndexStore, SessionCursor

__all__ = ["TranscriptFiles", "pending_delta"]

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


@dataclass(frozen=True)
class _Listed:
    """A listed transcript file, with when it was listed (monotonic) and the change
    time the index holds of it (None: not indexed)."""

    file: TranscriptFile
    now: float
    indexed_mtime_ns: int | None = None


class TranscriptFiles:
    """The sessions folder's transcripts (module doc). Holds no state: one instance
    serves every agent's sync."""

    name = "files"

    def owns(self, path: str) -> bool:
        prefix = SESSIONS_SOURCE + "/"
        return path.startswith(prefix) and "/" not in path[len(prefix) :]

    def listing(self, run: SyncRun) -> Listing:
        store, cfg, report = run.store, run.cfg, run.report
        odd = run.skips
        first = len(odd)
        folder = cfg.sessions_dir()
        try:
            files = list_transcripts(
                folder,
                cfg.sessions.includeRotated,
                on_skip=lambda p, why: odd.append((p, why)),
                links=cfg.limits.allowHardLinks,
            )
        except TranscriptsUnavailable as exc:
            raise TranscriptsUnavailable(f"{exc.message}{self._kept(store)}") from exc
        if not files and folder is not None and not os.path.lexists(folder):
            kept = self._kept(store)
            if kept:  # it was there: say so, and keep what it gave
                raise TranscriptsUnavailable(f"sessions folder {folder} is gone{kept}")
        forgotten, registered = db_facts(store, cfg, report)
        report.forgotten |= forgotten
        if forgotten:  # `openclaw memory forget`: as if the file were gone (its rows go)
            files = [f for f in files if not session_ids_of(f.name, registered) & forgotten]
        report.files = len(files)
        for path, why in odd[first:]:
            report.errors.append({"path": path, "reason": why})
        now = time.monotonic()
        run.quiet.forget({f.display for f in files})
        with store.transaction():
            _follow_renames(store, files, report)
        states = store.file_states(SESSIONS_SOURCE)
        # a transcript become a hard link is not read, and not taken for gone either
        held = frozenset(path for path, why in odd[first:] if why.startswith(HARD_LINK_REASON))
        return Listing(
            [
                Transcript(
                    f.display,
                    _Listed(f, now, st.mtime_ns if (st := states.get(f.display)) else None),
                )
                for f in files
            ],
            held=held,
        )

    def _kept(self, store: IndexStore) -> str:
        """What stays indexed of the folder while it cannot be listed, said so."""
        n = indexed_from(store, self)
        if not n:
            return ""
        return (
            f"; the {n} transcript(s) indexed from it are kept (memindex index --force drops them)"
        )

    def changed(self, run: SyncRun, t: Transcript, cursor: SessionCursor | None) -> Change:
        listed = _listed(t)
        f = listed.file
        archive = is_archive_name(f.name)
        if (
            not archive
            and cursor is not None
            and f.size == cursor.committed
            and listed.indexed_mtime_ns is not None
            and f.mtime_ns != listed.indexed_mtime_ns
        ):  # written since it was read to its end, not one byte longer: rewritten in
            # place (a value masked), anywhere in it: read again from the start
            log.info("transcript %s was rewritten in place: reading it again", f.display)
            return Change.RESTART
        if run.due_only and not archive:  # an archive is complete: due
            try:
                nbytes, nlines = pending_delta(f, cursor)
            except (OSError, MemindexError):
                return Change.NONE  # gone or replaced since the listing: the next sync sees it
            if not _due(run.cfg, nbytes, nlines, run.quiet.quiet_for(f, listed.now)):
                if nbytes:
                    run.report.deferred += 1
                # rows and no cursor: a tail (from before a restart too), now emptied
                emptied = (
                    not nbytes and cursor is None and run.store.file_lines(f.display) is not None
                )
                # a tail to index (the driver writes it; a failed one is tried again)
                return Change.TAIL if run.quiet.new_tail(f, nbytes) or emptied else Change.NONE
        if cursor is not None and not same_file(cursor, f):
            log.info("transcript %s was truncated or replaced: reading it again", f.display)
            return Change.RESTART

        if archive and cursor is not None and cursor.committed >= f.size:
            return Change.NONE  # read to its end before
        return Change.READ

    def read(
        self,
        run: SyncRun,
        t: Transcript,
        cursor: SessionCursor | None,
        should_stop: Callable[[], bool] | None,
    ) -> Generator[Piece, None, None]:
        f = _file(t)
        if is_archive_name(f.name):
            yield from archive_pieces(f, cursor, run.report, should_stop)
        else:
            yield from _jsonl_pieces(f, cursor, should_stop)

    def render(self, t: Transcript, piece: Piece, *, warn: bool) -> tuple[Messages, int]:
        """A JSONL slice's or an archive's lines (the last is line ``piece.lines``)."""
        raw = cast("list[bytes | None]", list(piece.records))
        return messages_of(raw, piece.lines - len(raw), t.display, warn=warn)

    def tail(self, run: SyncRun, t: Transcript, cursor: SessionCursor | None) -> Tail | None:
        f = _file(t)
        got = read_tail(f, cursor)
        if got is None:  # truncated or replaced: read again when due, not looked at before
            run.quiet.tail_done(f, f.size)  # it changes again
        return got

    def tailed(self, run: SyncRun, t: Transcript, tail: Tail) -> None:
        run.quiet.tail_done(_file(t), tail.seen)


def _listed(t: Transcript) -> _Listed:
    assert isinstance(t.handle, _Listed)
    return t.handle


def _file(t: Transcript) -> TranscriptFile:
    return _listed(t).file


def _jsonl_pieces(
    f: TranscriptFile, cur: SessionCursor | None, should_stop: Callable[[], bool] | None
) -> Generator[Piece, None, None]:
    """The complete lines past the cursor, ``STEP_BYTES`` at a time; the first piece
    cuts the tail indexed before it."""
    committed = cur.committed if cur else 0
    lines_done = cur.lines if cur else 0
    first = True
    while committed < f.size:
        if not first and should_stop is not None and should_stop():
            break  # the cursor is committed: the rest comes next time
        fd = f.open()
        try:
            raw_lines, end, head = read_complete_lines(fd, committed, STEP_BYTES)
            head_len = min(len(head), end)
            mark = cursor_mark(fd, head_len, end)
            now = os.fstat(fd)  # its change time as read: a later one at this size is a rewrite
        finally:
            os.close(fd)
        if end == committed:
            break  # only a partial line is left
        cut = lines_done if first else None
        lines_done += len(raw_lines)
        cursor = SessionCursor(
            f.display,
            f.dev,
            f.ino,
            end,
            lines_done,
            mark,
            head_len,
            0,  # malformed: the sync's
        )
        state = FileState(f"{f.dev}:{f.ino}:{end}", now.st_mtime_ns, now.st_size)
        yield Piece(raw_lines, cursor, state, lines_done, cut)
        committed = end
        first = False


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
