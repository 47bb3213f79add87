"""Indexing a compressed transcript archive (``sources.transcripts.archives``): a deleted
session's transcript that OpenClaw keeps as a zstd file in the sessions folder.

An archive never grows, so it is read once, in slices of about ``_STEP_BYTES`` of
decompressed text (every line counts, messages or not), each committed with its
cursor: ``lines`` counts the archive's lines indexed so far and ``committed`` stays
0 until the last slice, when it becomes the file's size (done; the file's identity
is its inode and head, as a JSONL transcript's). A read interrupted (``should_stop``,
a crash) resumes by decompressing the stream again and passing over the lines
already indexed; so that a writer stopped every second still gets through a large
archive, a call reads at least ``_MIN_BYTES`` before it heeds ``should_stop``.
Citations number the archive's decompressed lines, as ``memory_get`` reads them.
The slices are ``Piece``s of the sessions folder's source (``session_files``); the
sync writes them.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Generator

from indexer.errors import FileUnreadable
from indexer.indexing.transcripts.session_tail import cursor_mark
from indexer.indexing.transcripts.source import Piece, SessionReport
from indexer.sources.transcripts.archives import archive_blocks, archive_lines
from indexer.sources.transcripts.line_reads import MAX_LINE_BYTES
from indexer.sources.transcripts.sessions import TranscriptFile
from indexer.store import FileState, SessionCursor

__all__ = ["archive_pieces"]

log = logging.getLogger(__name__)

_STEP_BYTES = 1024 * 1024
_MIN_BYTES = 16 * 1024 * 1024  # read in one call before should_stop is heeded
_HEAD = 4096


def archive_pieces(
    f: TranscriptFile,
    cur: SessionCursor | None,
    report: SessionReport,
    should_stop: Callable[[], bool] | None = None,
) -> Generator[Piece, None, None]:
    """The archive's lines past the cursor in slices (records: each line, None when
    over the bound; the last is line ``Piece.lines``), the last one marking it read."""
    done = cur.lines if cur is not None else 0
    fd = f.open()
    try:
        head = os.pread(fd, _HEAD, 0)
        lineno = 0
        records: list[bytes | None] = []  # every line since the last slice
        size = 0

        def piece(final: bool) -> Piece:
            end = f.size if final else 0
            mark = cursor_mark(fd, len(head), end)
            cursor = SessionCursor(
                f.display,
                f.dev,
                f.ino,
                end,
                lineno,
                mark,
                len(head),
                0,  # malformed: the sync's
            )
            state = FileState(f"{f.dev}:{f.ino}:{lineno}", f.mtime_ns, f.size)
            return Piece(records, cursor, state, lineno)

        read = 0  # decompressed bytes looked at in this call
        error: str | None = None
        try:
            for raw in archive_lines(archive_blocks(fd), MAX_LINE_BYTES):
                lineno += 1
                if lineno <= done:
                    continue
                n = len(raw) + 1 if raw is not None else MAX_LINE_BYTES
                size += n
                read += n
                records.append(raw)
                if size >= _STEP_BYTES:  # a slice, every line counted: messages or not
                    yield piece(final=False)
                    records, size = [], 0
                    if should_stop is not None and read >= _MIN_BYTES and should_stop():
                        report.more = True
                        return
        except FileUnreadable as exc:  # damaged or past the bound: keep what was read
            error = exc.reason
        yield piece(final=True)
        if error is not None:
            log.warning("%s: %s; indexed up to line %d", f.display, error, lineno)
            why = f"{error} (read to line {lineno})"
            report.errors.append({"path": f.display, "reason": why})
            report.partial[f.display] = why
    finally:
        os.close(fd)
