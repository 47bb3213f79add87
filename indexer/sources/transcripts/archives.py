"""OpenClaw's compressed transcript archives, read within bounds.

Since 2026.9 ``openclaw sessions delete`` keeps a deleted session's transcript as
``<sessionId>.jsonl.deleted.<time>.<generation>.zst`` in the agent's sessions folder:
a zstd stream whose lines are the session's events, one JSON object each, as a JSONL
transcript's (OpenClaw's memory-core keeps searching it; so does memindex). A reset
archive (``.jsonl.reset.<…>.zst``) is the same.

OpenClaw's cold storage (``sessions/cold/<sha256>.jsonl.zst``, or the same bytes in
the database) is a zstd stream of JSON records, ``{"kind": "event", "row": {"seq",
"event_json"}}`` among them: ``cold_events`` reads one the same way, after checking
its SHA-256 (the file is hashed in blocks; its size is bounded too).

Reading one is bounded like every source: the caller opens it through ``safefs`` (no
symlink, regular file, non-blocking); decompression proceeds a block at a time and
stops at ``MAX_ARCHIVE_BYTES`` of output (a small file that would expand without end
costs a bounded read), and a line longer than the caller's cap is skipped without
being held.
"""

from __future__ import annotations

import fnmatch
import hashlib
import io
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import IO, cast

from indexer.errors import FileUnreadable
from indexer.sources import safefs

__all__ = [
    "MAX_ARCHIVE_BYTES",
    "archive_blocks",
    "cold_events",
    "archive_lines",
    "archive_session_id",
    "session_ids_of",
    "transcript_session_ids",
    "is_archive_name",
]

MAX_ARCHIVE_BYTES = 256 * 1024 * 1024  # decompressed; past it the rest is not read
_PATTERNS = ("*.jsonl.deleted.*.zst", "*.jsonl.reset.*.zst")
_BLOCK = 1 << 20
_WINDOW = 32 * 1024 * 1024


def is_archive_name(name: str) -> bool:
    """A compressed transcript archive's file name."""
    return "/" not in name and any(fnmatch.fnmatchcase(name, p) for p in _PATTERNS)


# OpenClaw's names for a session's files (src/config/sessions/
# generated-transcript-session-id.ts): ``<id>.jsonl``, a thread's ``<id>-topic-<thread>.jsonl``,
# a fork's ``<ISO time>_<id>.jsonl``; an archive appends ``.reset.<time>``, ``.deleted.<time>``…
_FORK = re.compile(r"^\d{4}-\d{2}-\d{2}T[\w.:+-]+?_(.+)$")  # a time, any punctuation
_TOPIC = "-topic-"


def archive_session_id(name: str) -> str:
    """The name a transcript file (or its archive) starts with: its session's id
    when it is the session's own transcript."""
    return name.split(".jsonl", 1)[0]


def transcript_session_ids(name: str) -> frozenset[str]:
    """Every session id a transcript file's name may stand for: the name itself, the
    session a thread's transcript (``-topic-``) or a fork belongs to. A forgotten
    session's id among them keeps the file out (stricter than OpenClaw, which reads
    the thread and fork forms only for the ids it generates)."""
    ids = {archive_session_id(name)}
    for base in list(ids):
        m = _FORK.match(base)
        if m:
            ids.add(m.group(1))
    for base in list(ids):
        at = base.find(_TOPIC)
        if at > 0:
            ids.add(base[:at])
    return frozenset(ids)


def session_ids_of(name: str, registered: dict[str, tuple[str, str]]) -> frozenset[str]:
    """The session ids a transcript file stands for: the one OpenClaw registered for
    an archive of that name (``registered``: name -> (session id, key)), and those its
    name reads as (``transcript_session_ids``)."""
    got = registered.get(name)
    ids = transcript_session_ids(name)
    return ids | {got[0]} if got else ids


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
    return _blocks(io.BufferedReader(_Raw(fd), _BLOCK), strict)


def _blocks(source: io.BufferedIOBase | io.BytesIO, strict: bool) -> Iterator[bytes]:
    import zstandard

    limit = MAX_ARCHIVE_BYTES
    total = 0
    try:
        # a frame may ask for a window of up to 2 GiB: 32 MiB is more than OpenClaw
        # writes (its levels use 8 MiB at most) and bounds what a crafted one costs
        with zstandard.ZstdDecompressor(max_window_size=_WINDOW).stream_reader(
            cast(IO[bytes], source), read_size=_BLOCK, read_across_frames=True
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


def _file_sha256(fd: int) -> str:
    size = os.fstat(fd).st_size
    if size > MAX_ARCHIVE_BYTES:
        raise FileUnreadable(f"cold archive of {size} bytes, over the bound: not read")
    digest = hashlib.sha256()
    pos = 0
    while block := os.pread(fd, _BLOCK, pos):
        pos += len(block)
        if pos > MAX_ARCHIVE_BYTES:
            raise FileUnreadable("cold archive grew past the bound while it was read")
        digest.update(block)
    return digest.hexdigest()


def cold_events(
    sessions_dir: Path, name: str, sha256: str, blob: bytes | None, max_event: int
) -> Iterator[tuple[int, str | None]]:
    """The events of a cold session, as (seq, JSON text; None when over ``max_event``
    bytes): from ``blob`` (an archive kept in the database) or the file
    ``sessions_dir/cold/name``, opened without following a symlink (``cold`` is not
    followed either), a regular file only (FileUnreadable, or FileVanished when it is
    not there), checked against ``sha256`` first."""
    if blob is not None:
        if hashlib.sha256(blob).hexdigest() != sha256:
            raise FileUnreadable(f"cold archive {name} does not match its checksum")
        yield from _records(_blocks(io.BytesIO(blob), True), max_event)
        return
    if "/" in name or name in (".", "..") or "\x00" in name:
        raise FileUnreadable(f"cold archive name {name!r} refused")
    fd = safefs.open_under(sessions_dir, ("cold", name))
    try:
        if _file_sha256(fd) != sha256:
            raise FileUnreadable(f"cold archive {name} does not match its checksum")
        yield from _records(archive_blocks(fd), max_event)
    finally:
        os.close(fd)


def _records(blocks: Iterator[bytes], max_event: int) -> Iterator[tuple[int, str | None]]:
    # a record holds its event JSON-escaped: up to about twice the event's size
    for line in archive_lines(blocks, 2 * max_event + 4096):
        if line is None:
            continue  # a record over the bound: its seq is unknown, it is passed over
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        row = rec.get("row") if isinstance(rec, dict) and rec.get("kind") == "event" else None
        if not isinstance(row, dict) or type(row.get("seq")) is not int:
            continue
        text = row.get("event_json")
        ok = isinstance(text, str) and len(text.encode("utf-8", "surrogatepass")) <= max_event
        yield row["seq"], text if ok else None
