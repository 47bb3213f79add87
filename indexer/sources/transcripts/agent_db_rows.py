"""What a row of OpenClaw's agent database holds, decoded within bounds: an event's
JSON text (``decode_event``) and whether a session key is an automation's
(``automation_key``: no memory, as memory-core's session-kind gating has it)."""

from __future__ import annotations

import re
from typing import Any

__all__ = ["MAX_EVENT_BYTES", "automation_key", "decode_event"]

MAX_EVENT_BYTES = 4 * 1024 * 1024  # one event, as one JSONL line (line_reads.MAX_LINE_BYTES)

_CRON_RUN = re.compile(r"^agent:[^:]+:cron:[^:]+:run:[^:]+(?::|$)")


def automation_key(key: str) -> bool:
    """A cron run's, a heartbeat's or dreaming's narrative session key."""
    k = key.strip()
    rest = k.split(":", 2)[2] if k.count(":") >= 2 else k
    return bool(
        _CRON_RUN.match(k) or k.endswith(":heartbeat") or rest.startswith("dreaming-narrative-")
    )


def decode_event(text: Any, text_len: Any, blob: Any, declared: Any) -> str | None:
    """An event's JSON text, or None: over MAX_EVENT_BYTES (stored, declared or
    decompressed: a frame is read to the bound at most), a frame that does not
    decompress to its declared size, not UTF-8."""
    if text is not None:
        return str(text)
    if text_len is not None or blob is None:
        return None  # text over the bound (not loaded), or no event at all
    if declared is not None and (not isinstance(declared, int) or not declared >= 0):
        return None
    if isinstance(declared, int) and declared > MAX_EVENT_BYTES:
        return None  # never decompressed
    import io

    import zstandard

    limit = declared if isinstance(declared, int) else MAX_EVENT_BYTES
    try:
        with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(bytes(blob))) as reader:
            raw = reader.read(limit + 1)
    except zstandard.ZstdError:
        return None
    if len(raw) > limit or (isinstance(declared, int) and len(raw) != declared):
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
