"""OpenClaw's compressed transcript archives, read within bounds.

Since 2026.9 ``openclaw sessions delete`` keeps a deleted session's transcript as
``<sessionId>.jsonl.deleted.<time>.<generation>.zst`` in the agent's sessions folder:
a zstd stream whose lines are the session's events, one JSON object each, as a JSONL
transcript's (OpenClaw's memory-core keeps searching it; so does memindex). A reset
archive (``.jsonl.reset.<…>.zst``) is the same.

Reading one is bounded like every source: the caller opens it through ``safefs`` (no
symlink, regular file, non-blocking); decompression proceeds a block at a time and
stops at ``MAX_ARCHIVE_BYTES`` of output (a small file that would expand without end
costs a bounded read), and a line longer than the caller's cap is skipped without
being held.
"""

from __future__ import annotations

import fnmatch
import io
import os
from collections.abc import Iterator

from indexer.errors import FileUnreadable

__all__ = [
    "MAX_ARCHIVE_BYTES",
    "archive_blocks",
    "archive_lines",
    "archive_session_id",
    "is_archive_name",
]

MAX_ARCHIVE_BYTES = 256 * 1024 * 1024  # decompressed; past it the rest is not read
_PATTERNS = ("*.jsonl.deleted.*.zst", "*.jsonl.reset.*.zst")
_BLOCK = 1 << 20


def is_archive_name(name: str) -> bool:
    """A compressed transcript archive's file name."""
    return "/" not in name and any(fnmatch.fnmatchcase(name, p) for p in _PATTERNS)


def archive_session_id(name: str) -> str:
    """The session id an archive (or any transcript file) name starts with."""
    return name.split(".jsonl", 1)[0]


class _Raw(io.RawIOBase):
    """A descriptor read with pread from offset 0 (the caller keeps it open)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.pos = 0

    def readable(self) -> bool:
        return True

    def readinto(self, b: memoryview) -> int:  # type: ignore[override]
        data = os.pread(self.fd, len(b), self.pos)
        b[: len(data)] = data
        self.pos += len(data)
        return len(data)


def archive_blocks(fd: int, *, strict: bool = True) -> Iterator[bytes]:
    """The decompressed bytes of the archive open at ``fd``, a block at a time, at
    most ``MAX_ARCHIVE_BYTES`` of them: past it FileUnreadable (``strict``) or the
    end (what memory_get reads: the lines indexing could index). A damaged stream:
    FileUnreadable after the blocks that could be read."""
    import zstandard

    limit = MAX_ARCHIVE_BYTES
    total = 0
    try:
        source = io.BufferedReader(_Raw(fd), _BLOCK)
        with zstandard.ZstdDecompressor().stream_reader(
            source, read_size=_BLOCK, read_across_frames=True
        ) as reader:
            while block := reader.read(_BLOCK):
                total += len(block)
                if total > limit:
                    if not strict:
                        yield block[: len(block) - (total - limit)]
                        return
                    raise FileUnreadable(f"archive decompresses past {limit // (1024 * 1024)} MiB")
                yield block
    except zstandard.ZstdError as exc:
        raise FileUnreadable(f"not a readable zstd archive ({exc})") from exc


def archive_lines(blocks: Iterator[bytes], max_line: int) -> Iterator[bytes | None]:
    """The lines of ``blocks`` without their newlines; a line longer than
    ``max_line`` bytes is None (its bytes are dropped as they come)."""
    cur = bytearray()
    over = False
    for block in blocks:
        pieces = block.split(b"\n")
        for i, piece in enumerate(pieces):
            if i:
                yield None if over else bytes(cur)
                cur.clear()
                over = False
            if not over:
                if len(cur) + len(piece) > max_line:
                    over = True
                    cur.clear()
                else:
                    cur += piece
    if cur or over:
        yield None if over else bytes(cur)
