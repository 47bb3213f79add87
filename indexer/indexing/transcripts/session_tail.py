"""A transcript's uncommitted delta (its *tail*): read and rendered here, indexed at
once by the sync driver (``session_sync``), replaced as it grows, cut again when the
delta is committed (``session_files``); and the helpers both read a transcript's
lines with."""

from __future__ import annotations

import hashlib
import logging
import os

from indexer.errors import MemindexError
from indexer.indexing.transcripts.source import Tail
from indexer.sources.transcripts.line_reads import MAX_LINE_BYTES, read_complete_lines
from indexer.sources.transcripts.messages import Messages
from indexer.sources.transcripts.sessions import (
    Malformed,
    TranscriptFile,
    parse_message,
)
from indexer.store import FileState, SessionCursor

__all__ = [
    "STEP_BYTES",
    "cursor_mark",
    "messages_of",
    "read_tail",
    "same_file",
]

log = logging.getLogger(__name__)

STEP_BYTES = 1024 * 1024  # read at most this much per transaction (~1 s of work)


MARK_BYTES = 4096  # the bytes just before a cursor's offset it proves are still there
_MARKED = "2:"  # a cursor's head that proves its place too (older ones: the head only)


def cursor_mark(fd: int, head_len: int, committed: int) -> str:
    """What a cursor at ``committed`` stands on: the file's first ``head_len`` bytes
    (which file it is) and the last ``MARK_BYTES`` before ``committed`` (that what was
    read is still there). A file truncated and written again through the same inode,
    its head kept, is read again unless its committed lines' last bytes are unchanged
    at their place, as the agent database's cursor checks its last event."""
    h = hashlib.sha256(os.pread(fd, head_len, 0))
    w = min(MARK_BYTES, committed)
    h.update(b"\0" + os.pread(fd, w, committed - w))
    return _MARKED + h.hexdigest()


def same_file(c: SessionCursor, f: TranscriptFile) -> bool:
    if (c.dev, c.ino) != (f.dev, f.ino) or f.size < c.committed:
        return False
    try:
        fd = f.open()
        try:
            if c.head.startswith(_MARKED):
                return cursor_mark(fd, c.head_len, c.committed) == c.head
            # a cursor from before marks: its head only (marked at its next commit)
            return hashlib.sha256(os.pread(fd, c.head_len, 0)).hexdigest() == c.head
        finally:
            os.close(fd)
    except (OSError, MemindexError):
        return False


def read_tail(f: TranscriptFile, cur: SessionCursor | None) -> Tail | None:
    """The complete lines past the cursor, rendered, to be indexed in place of the
    tail indexed before them (the cursor stays where it is: the next commit cuts them
    again); None when the file was truncated or replaced (read again from the start
    when due)."""
    if cur is not None and not same_file(cur, f):
        return None
    committed = cur.committed if cur else 0
    lines_done = cur.lines if cur else 0
    fd = f.open()
    try:
        raw_lines, end, _head = read_complete_lines(fd, committed, STEP_BYTES)
    finally:
        os.close(fd)
    seen = f.size - committed
    if end == committed:  # nothing past the cursor (emptied): no tail either
        return Tail(None, None, lines_done, seen)
    msgs, _bad = messages_of(raw_lines, lines_done, f.display, warn=False)
    state = FileState(f"{f.dev}:{f.ino}:{committed}", f.mtime_ns, committed)
    return Tail(msgs, state, lines_done, seen)


def messages_of(
    raw_lines: list[bytes | None], lines_done: int, display: str, *, warn: bool
) -> tuple[Messages, int]:
    """The messages on ``raw_lines`` (the first is line ``lines_done + 1``) and how
    many lines were malformed (the first logged when ``warn``)."""
    msgs = Messages()
    bad = 0
    for i, raw in enumerate(raw_lines):
        lineno = lines_done + i + 1
        if raw is not None and not raw.strip():
            continue  # blank line
        try:
            if raw is None:
                raise Malformed(f"line longer than {MAX_LINE_BYTES} bytes")
            msg = parse_message(raw)
        except Malformed as exc:
            if warn and bad == 0:
                log.warning("%s line %d: malformed JSON skipped (%s)", display, lineno, exc)
            bad += 1
            continue
        if msg is not None:
            msgs.add(msg, lineno)
    return msgs, bad
