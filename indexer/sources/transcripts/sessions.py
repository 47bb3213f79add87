"""Session transcripts (JSONL): file listing, message extraction, redaction.

One JSON object per line. A line is a message when ``type == "message"`` and its role
is ``user`` or ``assistant``, in the flat shape (``role``, ``content``) or the nested
one (``message: {role, content}``); content is a string or a list of
``{type: "text", text}`` blocks. Each message renders as one line (``User: …`` /
``Assistant: …``) with whitespace collapsed and secrets redacted (``redaction``);
the caller keeps the JSONL line number of every rendered line so citations point at
real JSONL lines.

Pure except ``list_transcripts`` and ``open_transcript`` (file access, all through
``safefs``: a symlink, FIFO or device named ``*.jsonl`` is never opened, and no read
blocks); the lines are read by ``line_reads``.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from indexer.errors import FileUnreadable, FileVanished, TranscriptsUnavailable, file_kind
from indexer.sources import safefs
from indexer.sources.origins import message_origin
from indexer.sources.redaction import redact, redact_json
from indexer.sources.transcripts.archives import is_archive_name

__all__ = [
    "Message",
    "TranscriptFile",
    "is_transcript_name",
    "list_transcripts",
    "open_transcript",
    "parse_message",
    "raw_event_line",
    "redact",
    "rendered_line",
]

SESSIONS_SOURCE = "sessions"
TRANSCRIPT_PATTERNS = ("*.jsonl", "*.jsonl.reset.*", "*.jsonl.deleted.*")

_ROLES = {"user": "User", "assistant": "Assistant"}
_NOISE = re.compile(
    r"^(?:no_reply|heartbeat(?:_ok)?|ok|okay|k|\[?no reply\]?|\(no reply\))[.!]?$", re.I
)


@dataclass(frozen=True, slots=True)
class Message:
    """One transcript message as indexed."""

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
    """A transcript file and the identity it was listed with."""

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
            why = _not_a_transcript(e.name, st, links)
            if why is not None:
                if on_skip is not None:
                    on_skip(f"{SESSIONS_SOURCE}/{safefs.printable(e.name)}", why)
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


def _not_a_transcript(name: str, st: os.stat_result, links: bool) -> str | None:
    """Why the entry ``name`` with a transcript's name is passed over, or None."""
    if not stat.S_ISREG(st.st_mode):
        return file_kind(st.st_mode)
    if not safefs.valid_utf8(name):
        return "file name is not valid UTF-8"
    return safefs.hard_link(st, links)


def open_transcript(path: str, *, links: bool = False) -> int:
    """A descriptor of the transcript at ``path`` (see ``TranscriptFile.open``)."""
    return safefs.open_under(os.path.dirname(path), (os.path.basename(path),), links=links)
