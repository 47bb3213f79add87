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
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from indexer.config import Config
from indexer.errors import FileUnreadable, FileVanished, MemindexError
from indexer.sources.chunking import chunk_markdown
from indexer.sources.sessions import (
    MAX_LINE_BYTES,
    SESSIONS_SOURCE,
    Malformed,
    TranscriptFile,
    list_transcripts,
    parse_message,
    read_complete_lines,
)
from indexer.sources.text import index_text
from indexer.sources.tokenizer import TokenCounter, get_counter
from indexer.store import ChunkRow, FileState, IndexStore, SessionCursor

__all__ = ["SessionReport", "pending_delta", "sync_sessions"]

log = logging.getLogger(__name__)

_STEP_BYTES = 8 * 1024 * 1024  # read at most this much per transaction


@dataclass
class SessionReport:
    files: int = 0
    indexed: int = 0  # files that got new rows
    messages: int = 0
    malformed: int = 0
    rotated: int = 0
    restarted: int = 0  # truncated or replaced files read again from the start
    removed: int = 0
    deferred: int = 0  # deltas below the thresholds, left for later
    chunksWritten: int = 0
    errors: list[dict[str, str]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _offsets(file_lines: Sequence[int]) -> str | None:
    """``ChunkRow.lines`` of a chunk whose text lines are these file lines."""
    first = file_lines[0]
    if file_lines[-1] - first == len(file_lines) - 1:
        return None  # no gap: text line k is file line first + k
    return ",".join(str(n - first) for n in file_lines)


def _head_hash(f: TranscriptFile, length: int) -> str:
    fd = f.open()
    try:
        return hashlib.sha256(os.pread(fd, length, 0)).hexdigest()
    finally:
        os.close(fd)


def _same_file(c: SessionCursor, f: TranscriptFile) -> bool:
    if (c.dev, c.ino) != (f.dev, f.ino) or f.size < c.committed:
        return False
    try:
        return _head_hash(f, c.head_len) == c.head
    except (OSError, MemindexError):
        return False


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


def _due(cfg: Config, f: TranscriptFile, nbytes: int, nlines: int, now: float) -> bool:
    if nbytes == 0:
        return False
    s = cfg.sessions
    if nbytes >= s.deltaBytes or nlines >= s.deltaMessages:
        return True
    return (now - f.mtime_ns / 1e9) * 1000 >= s.idleFlushMs


def sync_sessions(
    store: IndexStore,
    cfg: Config,
    *,
    due_only: bool = False,
    counter: TokenCounter | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> SessionReport:
    """Index what is new in every transcript. With ``due_only`` (the watcher), a delta
    is indexed only once it passes ``deltaBytes``/``deltaMessages`` or the file has
    been quiet for ``idleFlushMs``; ``memindex index`` and ``reindex`` index all.
    ``should_stop`` is asked between transcripts."""
    report = SessionReport()
    directory = cfg.sessions_dir()
    odd: list[tuple[str, str]] = []
    files = list_transcripts(
        directory, cfg.sessions.includeRotated, on_skip=lambda p, why: odd.append((p, why))
    )
    report.files = len(files)
    store.sync_skips(SESSIONS_SOURCE, odd)  # names that cannot be indexed: status shows them
    for path, why in odd:
        report.errors.append({"path": path, "reason": why})
    count = counter or get_counter()
    now = time.time()
    with store.transaction():
        _follow_renames(store, files, report)
    present = {f.display for f in files}
    cursors = store.session_cursors()  # read once: deleting gone paths leaves the rest as is
    known_paths = set(store.file_states(SESSIONS_SOURCE)) | set(cursors)
    gone = [p for p in known_paths if p not in present]
    if gone:
        with store.transaction():
            for p in gone:
                store.delete_session(p)
                report.removed += 1
    for f in files:
        if should_stop is not None and should_stop():
            break
        cur = cursors.get(f.display)
        if due_only:
            try:
                nbytes, nlines = pending_delta(f, cur)
            except (OSError, MemindexError):
                continue  # gone or replaced since the listing: the next sync sees it
            if not _due(cfg, f, nbytes, nlines, now):
                if nbytes:
                    report.deferred += 1
                continue
        try:
            _index_file(store, cfg, f, cur, report, count)
        except FileVanished:
            continue  # vanished mid-sync: the next sync drops its rows
        except FileUnreadable as exc:  # replaced by a symlink, FIFO or device meanwhile
            report.errors.append({"path": f.display, "reason": exc.reason})
        except OSError as exc:
            report.errors.append({"path": f.display, "reason": str(exc.strerror or exc)})
    return report


def _follow_renames(store: IndexStore, files: list[TranscriptFile], report: SessionReport) -> None:
    """Move cursors (and rows) whose inode now lives under another name."""
    cursors = store.session_cursors()
    by_inode = {(c.dev, c.ino): c for c in cursors.values()}
    for f in files:
        c = by_inode.get((f.dev, f.ino))
        if c is None or c.path == f.display or not _same_file(c, f):
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
) -> None:
    if cur is not None and not _same_file(cur, f):
        with store.transaction():
            store.delete_session(f.display)
        report.restarted += 1
        log.info("transcript %s was truncated or replaced: reading it again", f.display)
        cur = None
    committed = cur.committed if cur else 0
    lines_done = cur.lines if cur else 0
    malformed = cur.malformed if cur else 0
    wrote = False
    while committed < f.size:
        fd = f.open()
        try:
            raw_lines, end, head = read_complete_lines(fd, committed, _STEP_BYTES)
        finally:
            os.close(fd)
        if end == committed:
            break  # only a partial line is left
        rendered: list[str] = []
        line_map: list[int] = []
        for i, raw in enumerate(raw_lines):
            lineno = lines_done + i + 1
            if raw is not None and not raw.strip():
                continue  # blank line
            try:
                if raw is None:
                    raise Malformed(f"line longer than {MAX_LINE_BYTES} bytes")
                msg = parse_message(raw)
            except Malformed as exc:
                if malformed == 0:
                    log.warning("%s line %d: malformed JSON skipped (%s)", f.display, lineno, exc)
                malformed += 1
                report.malformed += 1
                continue
            if msg is None:
                continue
            rendered.append(msg.render())
            line_map.append(lineno)
        chunks = (
            chunk_markdown(
                "\n".join(rendered), count, tokens=cfg.chunking.tokens, overlap=cfg.chunking.overlap
            )
            if rendered
            else []
        )
        rows = [
            ChunkRow(
                line_map[c.start_line - 1],
                line_map[c.end_line - 1],
                "",
                c.hash,
                c.text,
                index_text(c.text),
                _offsets(line_map[c.start_line - 1 : c.end_line]),
            )
            for c in chunks
        ]
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
            report.chunksWritten += store.append_chunks(
                f.display, SESSIONS_SOURCE, state, lines_done, rows
            )
            store.put_session_cursor(cursor)
        report.messages += len(rendered)
        committed = end
        wrote = True
    if wrote:
        report.indexed += 1
