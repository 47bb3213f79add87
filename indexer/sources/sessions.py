"""Session transcripts (JSONL): file listing, message extraction, redaction.

One JSON object per line. A line is a message when ``type == "message"`` and its role
is ``user`` or ``assistant``, in the flat shape (``role``, ``content``) or the nested
one (``message: {role, content}``); content is a string or a list of
``{type: "text", text}`` blocks. Each message renders as one line (``User: …`` /
``Assistant: …``) with whitespace collapsed and secrets redacted (``redaction``);
the caller keeps the JSONL line number of every rendered line so citations point at
real JSONL lines.

Pure except ``list_transcripts``, ``read_complete_lines`` and ``read_lines`` (file
access, all through ``safefs``: a symlink, FIFO or device named ``*.jsonl`` is
never opened, and no read blocks).
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from indexer.errors import FileUnreadable, FileVanished, TranscriptsUnavailable, file_kind
from indexer.sources import safefs
from indexer.sources.archives import is_archive_name
from indexer.sources.origins import message_origin
from indexer.sources.redaction import redact, redact_json

__all__ = [
    "LineRange",
    "Message",
    "TranscriptFile",
    "is_transcript_name",
    "list_transcripts",
    "open_transcript",
    "parse_message",
    "read_complete_lines",
    "raw_event_line",
    "read_lines",
    "read_lines_from",
    "redact",
    "rendered_line",
]

SESSIONS_SOURCE = "sessions"
TRANSCRIPT_PATTERNS = ("*.jsonl", "*.jsonl.reset.*", "*.jsonl.deleted.*")
MAX_LINE_BYTES = 4 * 1024 * 1024  # a longer line is skipped as malformed

_ROLES = {"user": "User", "assistant": "Assistant"}
_NOISE = re.compile(
    r"^(?:no_reply|heartbeat(?:_ok)?|ok|okay|k|\[?no reply\]?|\(no reply\))[.!]?$", re.I
)


@dataclass(frozen=True, slots=True)
class Message:
    role: str  # "user" | "assistant"
    text: str  # whitespace-collapsed, redacted
    timestamp: str | None
    speaker: str | None = None  # a sender name, when the line carries one
    # who said it, as OpenClaw marks it (``message_origin``): a user message's
    # "owner" | "system" | "untrusted"; an assistant's "turn" (its turn's) or "tainted"
    origin: str = "untrusted"

    def render(self) -> str:
        who = _ROLES[self.role]
        return f"{who} ({self.speaker}): {self.text}" if self.speaker else f"{who}: {self.text}"


# What no index can store as text: NUL (PostgreSQL refuses it) and a half of a
# surrogate pair that a JSON escape left alone ("\\ud83d" from a tool that cut an
# emoji in two: not encodable as UTF-8, so neither SQLite nor PostgreSQL takes it).
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def storable(text: str) -> str:
    """``text`` with NUL and lone surrogates as U+FFFD."""
    return _UNSTORABLE.sub("\ufffd", text)


class Malformed(Exception):
    """A line that is not valid JSON (or not a JSON object)."""


def _content_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text":
                t = block.get("text")
                if isinstance(t, str):
                    parts.append(t)
        return " ".join(parts)
    return ""


def parse_message(raw: bytes) -> Message | None:
    """The message on one JSONL line, None for non-message or noise lines.

    Raises Malformed for a line that is not a JSON object."""
    try:
        obj = json.loads(raw)
    except (ValueError, RecursionError) as exc:  # includes invalid UTF-8
        raise Malformed(str(exc)[:120]) from exc
    if not isinstance(obj, dict):
        raise Malformed("not a JSON object")
    if obj.get("type") != "message":
        return None
    inner = obj.get("message")
    body = inner if isinstance(inner, dict) else obj
    role = body.get("role")
    if not isinstance(role, str) or role not in _ROLES:
        return None
    # redacted as written (a YAML key is a key at its line's start), then collapsed
    text = storable(" ".join(redact(_content_text(body.get("content"))).split()))
    if not text or _NOISE.match(text):
        return None
    ts = obj.get("timestamp", body.get("timestamp"))
    return Message(
        str(role),
        text,
        storable(ts) if isinstance(ts, str) else None,
        _speaker(obj, body),
        message_origin(str(role), body),
    )


def _speaker(obj: dict[str, Any], body: dict[str, Any]) -> str | None:
    """A short sender name (``speaker``, ``name`` or ``sender``), whitespace-collapsed."""
    for d in (body, obj):
        for key in ("speaker", "name", "sender"):
            v = d.get(key)
            if isinstance(v, str):
                v = storable(" ".join(v.split())[:64])
                if v:
                    return redact(v)
    return None


def rendered_line(line: str) -> str:
    """One transcript line as memory_get shows it: the message as search renders it,
    "" for a line that is no message (a tool call, a header, noise, malformed)."""
    try:
        msg = parse_message(line.encode("utf-8", "surrogatepass"))
    except Malformed:
        return ""
    return msg.render() if msg is not None else ""


_ESCAPE = re.compile(r"\\(?:u([0-9a-fA-F]{4})|([\\/\"bfnrt]))")
_SIMPLE = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def raw_event_line(line: str) -> str:
    """One transcript line as JSON with every string in it redacted (parsed first, so
    no escape hides a secret); a line that does not parse has its escapes decoded
    before it is redacted."""
    try:
        obj = json.loads(line)
    except (ValueError, RecursionError):
        decoded = _ESCAPE.sub(
            lambda m: (
                chr(int(m.group(1), 16)) if m.group(1) else _SIMPLE.get(m.group(2), m.group(2))
            ),
            line,
        )
        return storable(redact(decoded))
    return storable(json.dumps(redact_json(obj), ensure_ascii=False, separators=(",", ":")))


def is_transcript_name(name: str, include_rotated: bool = True) -> bool:
    """A transcript's file name: JSONL, or (rotated) OpenClaw's zstd archive of a
    deleted or reset session (``archives``)."""
    if "/" in name or name.startswith("."):
        return False
    if name.endswith(".zst"):
        return include_rotated and is_archive_name(name)
    patterns = TRANSCRIPT_PATTERNS if include_rotated else TRANSCRIPT_PATTERNS[:1]
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


@dataclass(frozen=True, slots=True)
class TranscriptFile:
    name: str
    path: str
    dev: int
    ino: int
    size: int
    mtime_ns: int
    links: bool = False  # hard links allowed (limits.allowHardLinks)

    @property
    def display(self) -> str:
        return f"{SESSIONS_SOURCE}/{self.name}"

    def open(self) -> int:
        """A descriptor of this transcript (no symlink, regular file, non-blocking)."""
        return open_transcript(self.path, links=self.links)


def list_transcripts(
    directory: Path | None,
    include_rotated: bool = True,
    on_skip: Callable[[str, str], None] | None = None,
    *,
    links: bool = False,
) -> list[TranscriptFile]:
    """Regular transcript files directly in ``directory`` (no symlinks; no hard links
    unless ``links``), sorted; none when it does not exist. ``on_skip(display,
    reason)`` hears of names that are not UTF-8, of hard links, and of symlinks,
    FIFOs or devices with a transcript's name. Raises TranscriptsUnavailable when
    ``directory`` is there but cannot be listed or is not a folder."""
    if directory is None:
        return []
    out: list[TranscriptFile] = []
    try:
        fd = safefs.open_dir(directory)
    except FileVanished:
        if os.path.lexists(directory):  # a file (or a link to one) under its name
            raise TranscriptsUnavailable(f"sessions folder {directory} is not a folder") from None
        return []
    except (OSError, FileUnreadable) as exc:
        why = exc.strerror if isinstance(exc, OSError) else str(exc)
        raise TranscriptsUnavailable(f"cannot list sessions folder {directory}: {why}") from exc
    try:
        with os.scandir(fd) as it:
            entries = list(it)
        for e in entries:
            if not is_transcript_name(e.name, include_rotated):
                continue
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                continue
            display = f"{SESSIONS_SOURCE}/{safefs.printable(e.name)}"
            if not stat.S_ISREG(st.st_mode):
                if on_skip is not None:
                    on_skip(display, file_kind(st.st_mode))
                continue
            if not safefs.valid_utf8(e.name):
                if on_skip is not None:
                    on_skip(display, "file name is not valid UTF-8")
                continue
            why = safefs.hard_link(st, links)
            if why is not None:
                if on_skip is not None:
                    on_skip(display, why)
                continue
            path = os.path.join(directory, e.name)
            out.append(
                TranscriptFile(
                    e.name, path, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, links
                )
            )
    except OSError as exc:
        raise TranscriptsUnavailable(
            f"cannot list sessions folder {directory}: {exc.strerror}"
        ) from exc
    finally:
        os.close(fd)
    out.sort(key=lambda t: t.name)
    return out


def open_transcript(path: str, *, links: bool = False) -> int:
    """A descriptor of the transcript at ``path`` (see ``TranscriptFile.open``)."""
    return safefs.open_under(os.path.dirname(path), (os.path.basename(path),), links=links)


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
