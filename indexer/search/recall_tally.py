"""How often memory_search returned each line of MEMORY.md and USER.md: what the
memory audit ranks the entries a session never sees by (the most recalled first).

The daemon's searches are counted (a one-shot command's are a person trying things
out, not the agent recalling); each returned line of a curated file counts once per
search, keyed by its file and its text (normalised: annotations and list marks out),
so a count follows its entry when lines move. Kept in memory, written beside the
index (``<index>.recalls.json``, mode 0600, replaced whole) at most every
``FLUSH_S`` seconds and when the daemon stops; at most ``MAX_KEYS`` lines, the least
recalled dropped first. A file that does not read is started again, never fatal.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

from indexer.api import SearchResult
from indexer.config import Config
from indexer.errors import FileUnreadable, FileVanished
from indexer.sources import safefs
from indexer.sources.curated import LIST_MARK, strip_annotations

__all__ = ["FLUSH_S", "MAX_KEYS", "RecallTally", "line_key", "load_recalls", "recalls_path"]

FLUSH_S = 60.0
MAX_KEYS = 5_000
MAX_FILE_BYTES = 2 * 1024 * 1024
_MAX_COUNT = 2**53
_CURATED = ("MEMORY.md", "USER.md")

log = logging.getLogger(__name__)


def line_key(path: str, line: str) -> str | None:
    """The key a curated line is counted under (None: a blank line or a heading)."""
    text = " ".join(LIST_MARK.sub("", strip_annotations(line)).split())
    if not text or text.startswith("#"):
        return None
    return f"{path}\t{hashlib.sha256(text.encode()).hexdigest()[:16]}"


def recalls_path(cfg: Config) -> Path:
    """Where an agent's counts are kept: beside its index file (on PostgreSQL, where
    that file would be: counts are this machine's)."""
    index = cfg.resolved_index_path()
    return index.with_name(index.stem + ".recalls.json")


def load_recalls(path: Path) -> dict[str, int]:
    """The counts written at ``path`` ({} when there are none or they do not read),
    read as every source is: no symlink followed, a regular file only, never
    blocking (a FIFO put there), bounded; nested too deep, or counts out of range
    (not 1 .. 2**53), are not counts."""
    try:
        raw, _stamp = safefs.read_file(path.parent, (path.name,), MAX_FILE_BYTES, exact=True)
        data = json.loads(raw)
    except (OSError, ValueError, RecursionError, FileUnreadable, FileVanished):
        return {}
    counts = data.get("lines") if isinstance(data, dict) else None
    if not isinstance(counts, dict):
        return {}
    return {
        k: v
        for k, v in counts.items()
        if isinstance(k, str) and type(v) is int and 0 < v <= _MAX_COUNT
    }


class RecallTally:
    """The counts of one agent's index, written to ``path``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._counts = load_recalls(path)
        self._dirty = False
        self._next_flush = time.monotonic() + FLUSH_S

    def record(self, results: Iterable[SearchResult]) -> None:
        """Count the curated lines of one search's results (their snippets' lines)."""
        keys: set[str] = set()
        for r in results:
            if r.get("source") != "memory" or r.get("path") not in _CURATED:
                continue
            for line in r.get("snippet", "").split("\n"):
                key = line_key(r["path"], line)
                if key is not None:
                    keys.add(key)
        if not keys:
            return
        with self._lock:
            for key in keys:
                self._counts[key] = self._counts.get(key, 0) + 1
            self._dirty = True
            due = time.monotonic() >= self._next_flush
        if due:
            self.flush()

    def counts(self) -> Mapping[str, int]:
        with self._lock:
            return dict(self._counts)

    def flush(self) -> None:
        """Write the counts if they changed (a failure is logged; they stay in memory)."""
        with self._lock:
            if not self._dirty:
                return
            if len(self._counts) > MAX_KEYS:
                kept = sorted(self._counts.items(), key=lambda kv: -kv[1])[:MAX_KEYS]
                self._counts = dict(kept)
            data = json.dumps({"version": 1, "lines": self._counts}).encode()
            self._dirty = False
            self._next_flush = time.monotonic() + FLUSH_S
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, self.path)
        except OSError as exc:
            log.warning("cannot write the recall counts %s: %s", self.path, exc)
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            with self._lock:
                self._dirty = True
