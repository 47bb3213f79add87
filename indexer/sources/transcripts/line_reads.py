"""Lines read from an open file descriptor, bounded: a transcript's complete lines
from a cursor (the partial last line waits for its newline, an over-long line is
skipped, never held whole), and a range of numbered lines streamed in blocks (for
``memory_get``, over a file or an archive's decompressed text)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

__all__ = ["MAX_LINE_BYTES", "LineRange", "read_complete_lines", "read_lines", "read_lines_from"]

MAX_LINE_BYTES = 4 * 1024 * 1024  # a longer line is skipped as malformed


def read_complete_lines(
    fd: int, offset: int, max_bytes: int
) -> tuple[list[bytes | None], int, bytes]:
    """Complete lines from ``offset``: (lines without their newline, end offset, head).

    Stops at the last newline within ``max_bytes`` (a partial last line waits for
    its newline); a first line longer than ``max_bytes`` comes back alone, read to
    its end. A line longer than ``MAX_LINE_BYTES`` comes back as None (to be counted
    as malformed) so reading moves past it. ``head`` is the file's first 256 bytes,
    which tell a rotated or replaced file from the one the cursor knew."""
    head = os.pread(fd, 256, 0)
    data = os.pread(fd, max_bytes, offset)
    if b"\n" not in data and len(data) >= max_bytes:
        # One line longer than a step: read to its end (kept up to MAX_LINE_BYTES,
        # skipped as malformed past it, never held whole).
        pos = offset + len(data)
        line = bytearray(data) if len(data) <= MAX_LINE_BYTES else None
        while True:
            block = os.pread(fd, 1 << 20, pos)
            if not block:
                return [], offset, head  # its newline has not come yet
            nl = block.find(b"\n")
            piece = block if nl < 0 else block[:nl]
            if line is not None:
                line += piece
                if len(line) > MAX_LINE_BYTES:
                    line = None
            if nl >= 0:
                if line is not None and line.endswith(b"\r"):
                    del line[-1:]
                return [bytes(line) if line is not None else None], pos + nl + 1, head
            pos += len(block)
    last = data.rfind(b"\n")
    if last < 0:
        return [], offset, head
    out: list[bytes | None] = []
    for ln in data[:last].split(b"\n"):
        if ln.endswith(b"\r"):
            ln = ln[:-1]
        out.append(ln if len(ln) <= MAX_LINE_BYTES else None)
    return out, offset + last + 1, head


@dataclass(frozen=True, slots=True)
class LineRange:
    """Lines read from a transcript for ``memory_get``."""

    lines: list[str]  # the lines asked for (or as many as fit in the byte limit)
    total: int  # lines in the whole file, numbered as split_lines() numbers them
    truncated: bool  # stopped early at the byte limit


def read_lines(
    fd: int, first: int, count: int | None, max_bytes: int, *, block_size: int = 1 << 20
) -> LineRange:
    """Lines ``first`` .. ``first + count - 1`` of a file, streamed in blocks.

    Lines are decoded one by one (an invalid byte becomes U+FFFD, a NUL too), so one
    bad line never makes the rest unreadable, and the file may be of any size: only
    the lines asked for are kept, at most ``max_bytes`` of them (whole lines; a first
    line longer than that alone is cut)."""

    def blocks() -> Iterator[bytes]:
        pos = 0
        while block := os.pread(fd, block_size, pos):
            pos += len(block)
            yield block

    return read_lines_from(blocks(), first, count, max_bytes)


def read_lines_from(
    blocks: Iterable[bytes], first: int, count: int | None, max_bytes: int
) -> LineRange:
    """``read_lines`` over any stream of blocks (an archive's decompressed text)."""
    last = None if count is None else first - 1 + count
    picked: list[str] = []
    size = 0
    truncated = False
    cur = bytearray()  # the bytes of the line being read, when it is wanted
    lineno = 1  # the number of the line being read
    tail = False  # the file does not end with a newline

    def wanted(n: int) -> bool:
        return not truncated and n >= first and (last is None or n <= last)

    def finish(n: int) -> None:
        nonlocal size, truncated
        if wanted(n):
            if picked and size + len(cur) > max_bytes:
                truncated = True
            else:
                picked.append(_decode_line(bytes(cur[:max_bytes])))
                size += len(cur) + 1
                truncated = len(cur) > max_bytes
        cur.clear()

    for block in blocks:
        if not block:
            continue
        tail = not block.endswith(b"\n")
        newlines = block.count(b"\n")
        if (
            truncated
            or (last is not None and lineno > last)
            or (lineno + newlines < first and not cur)
        ):
            lineno += newlines  # no wanted line here: count only
            continue
        for i, piece in enumerate(block.split(b"\n")):
            if i:
                finish(lineno)
                lineno += 1
            if wanted(lineno) and len(cur) <= max_bytes:
                cur += piece
    if tail:
        finish(lineno)
        total = lineno
    else:
        total = lineno - 1
    return LineRange(picked, total, truncated)


def _decode_line(raw: bytes) -> str:
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    return raw.decode("utf-8", "replace").replace("\x00", "\ufffd")
