"""Session transcripts (JSONL): file listing, message extraction, redaction.

One JSON object per line. A line is a message when ``type == "message"`` and its role
is ``user`` or ``assistant``, in the flat shape (``role``, ``content``) or the nested
one (``message: {role, content}``); content is a string or a list of
``{type: "text", text}`` blocks. Each message renders as one line (``User: …`` /
``Assistant: …``) with whitespace collapsed and secrets redacted; the caller keeps the
JSONL line number of every rendered line so citations point at real JSONL lines.

Pure except ``list_transcripts`` and ``read_complete_lines`` (file access).
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "Message",
    "TranscriptFile",
    "is_transcript_name",
    "list_transcripts",
    "parse_message",
    "read_complete_lines",
    "redact",
]

SESSIONS_SOURCE = "sessions"
TRANSCRIPT_PATTERNS = ("*.jsonl", "*.jsonl.reset.*", "*.jsonl.deleted.*")
MAX_LINE_BYTES = 4 * 1024 * 1024  # a longer line is skipped as malformed

_ROLES = {"user": "User", "assistant": "Assistant"}
_NOISE = re.compile(
    r"^(?:no_reply|heartbeat(?:_ok)?|ok|okay|k|\[?no reply\]?|\(no reply\))[.!]?$", re.I
)

# Obvious secrets; each pattern's whole match is replaced unless it has a group
# named "keep", which is kept in front of the redaction marker.
_SECRET_PATTERNS = [
    re.compile(
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)", re.S
    ),
    re.compile(r"\b(?:sk|pk|rk)-(?:proj-|live-|test-|ant-)?[A-Za-z0-9_\-]{16,}"),
    re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}\b"),
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}\b"),
    re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b"),
    re.compile(r"\bAKIA[0-9A-Z]{16}\b"),
    re.compile(r"\bAIza[0-9A-Za-z_\-]{30,}\b"),
    re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\b"),
    re.compile(r"(?P<keep>\b[Bb]earer\s+)[A-Za-z0-9._~+/=\-]{12,}"),
    re.compile(r"(?P<keep>\b[a-z][a-z0-9+.\-]*://[^\s:/@]+:)[^\s@/]+(?=@)"),
    re.compile(
        r"(?P<keep>\b(?:password|passwd|pwd|secret|api[_-]?key|access[_-]?token|auth[_-]?token"
        r"|client[_-]?secret|token)\b\s*[:=]\s*[\"']?)[^\s\"',;]{4,}",
        re.I,
    ),
]
REDACTED = "[REDACTED]"


def redact(text: str) -> str:
    """Replace API keys, bearer tokens, URL passwords and similar with [REDACTED]."""
    for pattern in _SECRET_PATTERNS:
        text = pattern.sub(
            lambda m: (m.group("keep") if "keep" in m.re.groupindex else "") + REDACTED, text
        )
    return text


@dataclass(frozen=True, slots=True)
class Message:
    role: str  # "user" | "assistant"
    text: str  # whitespace-collapsed, redacted
    timestamp: str | None
    speaker: str | None = None  # a sender name, when the line carries one

    def render(self) -> str:
        who = _ROLES[self.role]
        return f"{who} ({self.speaker}): {self.text}" if self.speaker else f"{who}: {self.text}"


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
    text = " ".join(_content_text(body.get("content")).split())
    if not text or _NOISE.match(text):
        return None
    ts = obj.get("timestamp", body.get("timestamp"))
    return Message(
        str(role), redact(text), ts if isinstance(ts, str) else None, _speaker(obj, body)
    )


def _speaker(obj: dict[str, Any], body: dict[str, Any]) -> str | None:
    """A short sender name (``speaker``, ``name`` or ``sender``), whitespace-collapsed."""
    for d in (body, obj):
        for key in ("speaker", "name", "sender"):
            v = d.get(key)
            if isinstance(v, str):
                v = " ".join(v.split())[:64]
                if v:
                    return redact(v)
    return None


def is_transcript_name(name: str, include_rotated: bool = True) -> bool:
    if "/" in name or name.startswith("."):
        return False
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

    @property
    def display(self) -> str:
        return f"{SESSIONS_SOURCE}/{self.name}"


def list_transcripts(directory: Path | None, include_rotated: bool = True) -> list[TranscriptFile]:
    """Regular transcript files directly in ``directory`` (no symlinks), sorted."""
    if directory is None:
        return []
    out: list[TranscriptFile] = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return []
    for e in entries:
        if not is_transcript_name(e.name, include_rotated):
            continue
        try:
            st = e.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            out.append(
                TranscriptFile(e.name, e.path, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
            )
    out.sort(key=lambda t: t.name)
    return out


def read_complete_lines(
    path: str, offset: int, max_bytes: int
) -> tuple[list[bytes | None], int, bytes]:
    """Complete lines from ``offset``: (lines without their newline, end offset, head).

    Stops at the last newline within ``max_bytes`` (a partial last line waits for
    its newline). A line longer than ``MAX_LINE_BYTES`` comes back as None (to be
    counted as malformed) so reading moves past it. ``head`` is the file's first 256 bytes,
    which tell a rotated or replaced file from the one the cursor knew."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        head = os.pread(fd, 256, 0)
        data = os.pread(fd, max_bytes, offset)
        if b"\n" not in data and len(data) >= max_bytes:
            # One giant line: find its end and skip it as malformed.
            pos = offset + len(data)
            while True:
                block = os.pread(fd, 1 << 20, pos)
                if not block:
                    return [], offset, head
                nl = block.find(b"\n")
                if nl >= 0:
                    return [None], pos + nl + 1, head
                pos += len(block)
    finally:
        os.close(fd)
    last = data.rfind(b"\n")
    if last < 0:
        return [], offset, head
    out: list[bytes | None] = []
    for ln in data[:last].split(b"\n"):
        if ln.endswith(b"\r"):
            ln = ln[:-1]
        out.append(ln if len(ln) <= MAX_LINE_BYTES else None)
    return out, offset + last + 1, head
