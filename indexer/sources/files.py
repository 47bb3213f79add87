"""Reading a Markdown file under a root as the index sees it: through ``safefs`` (no
symlinks, regular files only, never blocking), as UTF-8, with the hash and change
stamp of the bytes it was decoded from. UTF-16 with a byte-order mark is read too.

A session transcript exported as Markdown (OpenClaw's QMD backend writes them into
``memory.qmd.sessions.exportDir`` as ``# Session <id>`` files) is a transcript: its
secrets are redacted as those of every other transcript source, in the index and in
what ``memory_get`` returns. Other Markdown is the user's own and is read as written."""

from __future__ import annotations

import codecs
import contextlib
import hashlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from indexer.api import GetResponse
from indexer.errors import FileUnreadable, FileVanished, NotFound, PathRefused
from indexer.sources import safefs
from indexer.sources.redaction import redact

__all__ = [
    "SourceText",
    "decode_text",
    "is_session_export",
    "lines_result",
    "read_text",
    "reading",
]

_SESSION_EXPORT = re.compile(r"\A\s*# Session \S")


class SourceText(NamedTuple):
    """A file's text and what identifies the bytes it was decoded from."""

    text: str
    sha256: str
    mtime_ns: int
    size: int


# Windows editors save "Unicode" text as UTF-16 with a byte-order mark (Notepad's
# "UTF-16 LE"); its bytes are half NULs, so it would pass for a binary file.
_UTF16 = ((codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))


def decode_text(data: bytes) -> str:
    """Markdown bytes as text, or FileUnreadable (binary, or neither UTF-8 nor UTF-16
    with a byte-order mark). A BOM is dropped."""
    for bom, codec in _UTF16:
        if data.startswith(bom) and not data.startswith(codecs.BOM_UTF32_LE):
            try:
                text = data[len(bom) :].decode(codec)
            except UnicodeDecodeError as exc:
                raise FileUnreadable(
                    f"not valid {codec.upper()} (after its byte-order mark: bytes "
                    f"{exc.start + len(bom)}-{exc.end + len(bom) - 1})"
                ) from exc
            if "\x00" in text:
                raise FileUnreadable("binary file (UTF-16 holding NUL characters)")
            return text
    if b"\x00" in data:
        raise FileUnreadable("binary file (contains NUL bytes)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileUnreadable(
            f"not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})"
        ) from exc
    return text[1:] if text.startswith("\ufeff") else text


def read_text(
    root: str | Path,
    parts: tuple[str, ...],
    max_bytes: int,
    *,
    exact: bool = False,
    links: bool = False,
) -> SourceText:
    """Read the Markdown file ``root/parts…`` as UTF-8, opened through ``safefs`` (no
    symlink anywhere below the root, regular files only, never blocking).

    Raises FileVanished, FileUnreadable (a symlink, FIFO or device, a hard link
    unless ``links``, binary, invalid UTF-8, too large) or OSError for other I/O
    failures."""
    data, stamp = safefs.read_file(root, parts, max_bytes, exact=exact, links=links)
    text = decode_text(data)
    if is_session_export(text):
        text = redact(text)
    return SourceText(text, hashlib.sha256(data).hexdigest(), stamp, len(data))


def is_session_export(text: str) -> bool:
    """Whether Markdown ``text`` is a session transcript OpenClaw exported
    (``# Session <id>`` on its first line)."""
    return _SESSION_EXPORT.match(text) is not None


@contextlib.contextmanager
def reading(display: str) -> Iterator[None]:
    """Errors of reading a file the caller named carry its display path."""
    try:
        yield
    except FileVanished as exc:
        raise NotFound(f"{display}: no such file") from exc
    except FileUnreadable as exc:
        raise PathRefused(f"{display}: {exc.reason}") from exc


def lines_result(
    path: str, picked: list[str], first: int, total: int, truncated: bool
) -> GetResponse:
    """The memory_get result: ``picked`` are lines ``first``.. of a ``total``-line file.
    ``truncated``: the byte limit stopped it early; ``nextFrom`` says where to go on."""
    out: GetResponse = {
        "path": path,
        "text": "\n".join(picked),
        "from": first,
        "lines": len(picked),
        "totalLines": total,
        "truncated": truncated,
    }
    if truncated and first + len(picked) <= total:  # the last line cut: nothing after it
        out["nextFrom"] = first + len(picked)
    return out
