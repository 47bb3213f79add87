"""Indexing a compressed transcript archive (``sources.archives``): a deleted
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
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Callable

from indexer.config import Config
from indexer.errors import FileUnreadable
from indexer.indexing.transcripts import SessionReport, transcript_rows
from indexer.sources.archives import archive_blocks, archive_lines
from indexer.sources.messages import Messages
from indexer.sources.sessions import (
    MAX_LINE_BYTES,
    SESSIONS_SOURCE,
    Malformed,
    TranscriptFile,
    parse_message,
)
from indexer.sources.tokenizer import TokenCounter
from indexer.store import FileState, IndexStore, SessionCursor

__all__ = ["index_archive"]

log = logging.getLogger(__name__)

_STEP_BYTES = 1024 * 1024
_MIN_BYTES = 16 * 1024 * 1024  # read in one call before should_stop is heeded
_HEAD = 4096


def index_archive(
    store: IndexStore,
    cfg: Config,
    f: TranscriptFile,
    cur: SessionCursor | None,
    report: SessionReport,
    count: TokenCounter,
    should_stop: Callable[[], bool] | None = None,
) -> None:
    if cur is not None and cur.committed >= f.size:
        return  # read to its end before
    done = cur.lines if cur is not None else 0
    malformed = cur.malformed if cur is not None else 0
    fd = f.open()
    try:
        head = os.pread(fd, _HEAD, 0)
        lineno = 0
        msgs = Messages()
        size = 0
        wrote = False
        error: str | None = None

        def commit(final: bool) -> None:
            nonlocal msgs, size, wrote
            rows = transcript_rows(msgs, cfg, count)
            cursor = SessionCursor(
                f.display,
                f.dev,
                f.ino,
                f.size if final else 0,
                lineno,
                hashlib.sha256(head).hexdigest(),
                len(head),
                malformed,
            )
            state = FileState(f"{f.dev}:{f.ino}:{lineno}", f.mtime_ns, f.size)
            with store.transaction():
                report.chunksWritten += store.append_chunks(
                    f.display, SESSIONS_SOURCE, state, lineno, rows
                )
                store.put_session_cursor(cursor)
            report.messages += len(msgs)
            msgs, size, wrote = Messages(), 0, True

        read = 0  # decompressed bytes looked at in this call
        try:
            for raw in archive_lines(archive_blocks(fd), MAX_LINE_BYTES):
                lineno += 1
                if lineno <= done:
                    continue
                n = len(raw) + 1 if raw is not None else MAX_LINE_BYTES
                size += n
                read += n
                if raw is None or raw.strip():
                    try:
                        if raw is None:
                            raise Malformed(f"line longer than {MAX_LINE_BYTES} bytes")
                        msg = parse_message(raw)
                    except Malformed as exc:
                        if malformed == 0:
                            log.warning("%s line %d: skipped (%s)", f.display, lineno, exc)
                        malformed += 1
                        report.malformed += 1
                        msg = None
                    if msg is not None:
                        msgs.add(msg, lineno)
                if size >= _STEP_BYTES:  # a slice, every line counted: messages or not
                    commit(final=False)
                    if should_stop is not None and read >= _MIN_BYTES and should_stop():
                        report.more = True
                        return
        except FileUnreadable as exc:  # damaged or past the bound: keep what was read
            error = exc.reason
        commit(final=True)
        if error is not None:
            log.warning("%s: %s; indexed up to line %d", f.display, error, lineno)
            report.errors.append({"path": f.display, "reason": f"{error} (read to line {lineno})"})
        if wrote:
            report.indexed += 1
    finally:
        os.close(fd)
