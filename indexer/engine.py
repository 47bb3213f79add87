"""One agent's memory index: the operations the CLI and the socket server expose.

``MemoryIndex`` holds the config and the open store and implements memory_search,
memory_get, status and reindex with the result shapes of the socket protocol.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import __version__
from .chunking import split_lines
from .config import Config
from .discovery import resolve_get_path
from .errors import IndexMismatch, InvalidParams, NotFound, PathRefused
from .pipeline import FileUnreadable, FileVanished, Progress, SyncReport, read_text, sync
from .search import keyword_search, render_results
from .session_sync import SessionReport, session_path, sync_sessions
from .sessions import SESSIONS_SOURCE, is_transcript_name, redact
from .store import Store

__all__ = ["MemoryIndex", "SOURCES"]

SOURCES = ("memory", "sessions")


def _int_param(value: Any, name: str, minimum: int, default: int | None) -> int | None:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidParams(f"'{name}' must be an integer")
    if value < minimum:
        raise InvalidParams(f"'{name}' must be >= {minimum}")
    return value


class MemoryIndex:
    def __init__(self, cfg: Config, *, readonly: bool = False) -> None:
        self.cfg = cfg
        self.index_path: Path = cfg.resolved_index_path()
        self.store = Store(self.index_path, readonly=readonly)

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> MemoryIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- operations ------------------------------------------------------------

    def sync(
        self,
        *,
        force: bool = False,
        progress: Progress | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> SyncReport:
        """Memory files, then every transcript delta (a full backfill)."""
        t0 = time.monotonic()
        report = sync(self.store, self.cfg, force=force, progress=progress, should_stop=should_stop)
        if not report.stopped:
            report.sessions = sync_sessions(self.store, self.cfg).to_json()
        report.seconds = round(time.monotonic() - t0, 3)
        return report

    def sync_memory(self, *, should_stop: Callable[[], bool] | None = None) -> SyncReport:
        """Memory files only (what the watcher triggers)."""
        return sync(self.store, self.cfg, should_stop=should_stop)

    def sync_sessions(self, *, due_only: bool) -> SessionReport:
        return sync_sessions(self.store, self.cfg, due_only=due_only)

    def search(
        self,
        query: Any,
        *,
        max_results: Any = None,
        min_score: Any = None,
        sources: Any = None,
    ) -> dict[str, Any]:
        if not isinstance(query, str) or not query.strip():
            raise InvalidParams("'query' must be a non-empty string")
        if len(query) > 10_000:
            raise InvalidParams("'query' is longer than 10000 characters")
        limit = _int_param(max_results, "maxResults", 1, self.cfg.query.maxResults)
        assert limit is not None
        limit = min(limit, 200)
        if min_score is None:
            floor = self.cfg.query.minScore
        elif isinstance(min_score, (int, float)) and not isinstance(min_score, bool):
            floor = float(min_score)
            if not 0.0 <= floor <= 1.0:
                raise InvalidParams("'minScore' must be between 0 and 1")
        else:
            raise InvalidParams("'minScore' must be a number")
        wanted = self._sources(sources)
        self._check_workspace()
        q, hits = keyword_search(self.store, query, limit=limit, min_score=floor, sources=wanted)
        chars = self.cfg.query.maxSnippetChars
        return {
            "results": render_results(hits, q, limit, chars),
            "provider": None,
            "model": None,
            "mode": "keyword",
            "fallback": "no embedding provider configured: keyword search only",
        }

    def _check_workspace(self) -> None:
        indexed = self.store.meta_get("workspace")
        current = str(self.cfg.require_workspace().resolve())
        if indexed is not None and indexed != current:
            raise IndexMismatch(
                f"index {self.index_path} holds workspace {indexed}, not {current}: "
                "run 'memindex index' to rebuild it for this workspace"
            )

    @staticmethod
    def _sources(sources: Any) -> list[str] | None:
        if sources is None or sources == "all":
            return None
        if isinstance(sources, str):
            sources = [sources]
        if not isinstance(sources, list) or not all(isinstance(s, str) for s in sources):
            raise InvalidParams("'sources' must be a list of 'memory' / 'sessions'")
        bad = [s for s in sources if s not in SOURCES]
        if bad:
            raise InvalidParams(f"unknown source(s) {bad}: use 'memory' or 'sessions'")
        return list(sources) or None

    def get(self, path: Any, *, start: Any = None, lines: Any = None) -> dict[str, Any]:
        if not isinstance(path, str):
            raise PathRefused("'path' must be a string")
        first = _int_param(start, "from", 1, 1)
        count = _int_param(lines, "lines", 1, None)
        assert first is not None
        if path.startswith(SESSIONS_SOURCE + "/"):
            return self._get_transcript(path, first, count)
        display, abs_path = resolve_get_path(self.cfg, path)
        try:
            text, _ = read_text(abs_path, self.cfg.limits.maxFileBytes)
        except FileVanished as exc:
            raise NotFound(f"{display}: no such file") from exc
        except FileUnreadable as exc:
            raise PathRefused(f"{display}: {exc.reason}") from exc
        all_lines = split_lines(text)
        end = len(all_lines) if count is None else min(len(all_lines), first - 1 + count)
        picked = all_lines[first - 1 : end]
        return {
            "path": display,
            "text": "\n".join(picked),
            "from": first,
            "lines": len(picked),
            "totalLines": len(all_lines),
        }

    def _get_transcript(self, path: str, first: int, count: int | None) -> dict[str, Any]:
        """Lines of a transcript, secrets redacted; citations use these line numbers."""
        name = path[len(SESSIONS_SOURCE) + 1 :]
        if "\x00" in name or not is_transcript_name(name, self.cfg.sessions.includeRotated):
            raise PathRefused(f"refused path {path!r}: not a session transcript name")
        file = session_path(self.cfg, path)
        if file is None:
            raise PathRefused(f"refused path {path!r}: sessions are disabled for this agent")
        try:
            text, _ = read_text(file, self.cfg.limits.maxFileBytes * 8)
        except FileVanished as exc:
            raise NotFound(f"{path}: no such transcript") from exc
        except FileUnreadable as exc:
            raise PathRefused(f"{path}: {exc.reason}") from exc
        all_lines = split_lines(text)
        end = len(all_lines) if count is None else min(len(all_lines), first - 1 + count)
        picked = [redact(ln) for ln in all_lines[first - 1 : end]]
        return {
            "path": path,
            "text": "\n".join(picked),
            "from": first,
            "lines": len(picked),
            "totalLines": len(all_lines),
        }

    def status(self) -> dict[str, Any]:
        s = self.store
        last = s.meta_get("lastSync")
        fp = s.meta_get("fingerprint")
        counts = s.counts()
        for src in SOURCES:
            counts.setdefault(src, {"files": 0, "chunks": 0})
        return {
            "version": __version__,
            "indexPath": str(self.index_path),
            "workspace": s.meta_get("workspace"),
            "sources": counts,
            "files": sum(c["files"] for c in counts.values()),
            "chunks": sum(c["chunks"] for c in counts.values()),
            "provider": None,
            "model": None,
            "dims": None,
            "mode": "keyword",
            "vector": {
                "enabled": False,
                "available": s.vec_version is not None,
                "reason": s.vector_error or "no embedding provider configured",
            },
            "sqlite": s.versions(),
            "fingerprint": json.loads(fp) if fp else None,
            "lastSync": json.loads(last) if last else None,
            "dirty": last is None,
            "pendingBatches": [],
            "skipped": s.skipped(),
            "sessionsDir": str(self.cfg.sessions_dir()) if self.cfg.sessions_dir() else None,
            "malformedLines": sum(c.malformed for c in s.session_cursors().values()),
            "indexBytes": s.size_bytes(),
            "checkedAt": time.time(),
        }
