"""Transcripts in OpenClaw's agent database (OpenClaw 2026.9 and later), read-only.

OpenClaw keeps each agent's transcripts in ``agents/<id>/agent/openclaw-agent.sqlite``
(schema version 23): ``transcript_events(session_id, seq, event_json | event_zstd)``,
one row per event, each the JSON object a legacy JSONL line held (row ``seq`` is line
``seq + 1`` of the file ``openclaw doctor --fix`` imported). Around them:

* ``session_windows``: one row per session id, with its ``session_key``
  (``agent:main:main``); a daily rollover, a rewind or a fork starts a new id, the old
  window keeps its rows until retention deletes it;
* ``transcript_rewrite_watermarks``: a ``generation`` token that changes whenever a
  session's rows are rewritten in place or deleted and renumbered (a manual compact,
  a suffix replacement): rows past a cursor are new only while it stays the same;
* ``session_transcript_cold_archives``: a session gone cold has no rows left, its
  events are in ``<agent>/sessions/cold/<name>`` (a zstd stream of JSON records) or
  in the row's ``archive_blob``;
* ``session_nodes``: one row per session key, ``current_session_id`` the window the
  key is in now (a rewind starts a new window and points the key at it; the old one
  is history, which OpenClaw's memory-core does not index: neither does memindex);
* ``session_transcript_archives``: what ``openclaw sessions delete`` archived, by
  ``archive_name`` (the ``<id>.jsonl.deleted.<time>.<generation>.zst`` file written
  into the sessions folder) with its ``session_id`` and ``session_key``;
* ``memory_session_tombstones``: sessions ``openclaw memory forget`` forgot (per
  ``agent_id``): never indexed again, and purged from the index.

The gateway writes in short WAL transactions. This reader opens the file read-only
(never ``immutable``, never a write, never a checkpoint), reads in short statements
with a busy timeout, and decodes ``event_zstd`` (a plain zstd frame, no dictionary;
``event_utf8_bytes`` is its length).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

import apsw

from indexer.errors import TranscriptDbError

__all__ = ["SCHEMA_VERSION", "AgentDb", "ColdArchive", "DbSession"]

SCHEMA_VERSION = 23  # the agent schema version this reader was written against
_NEEDED = {
    "transcript_events": {"session_id", "seq", "event_json", "event_zstd", "event_utf8_bytes"},
    "session_windows": {"session_id", "session_key"},
    "transcript_rewrite_watermarks": {"session_id", "generation"},
}
_MAX_EVENT_BYTES = 4 * 1024 * 1024  # OpenClaw's own bound on one compressed event
_BUSY_MS = 2000


@dataclass(frozen=True, slots=True)
class ColdArchive:
    generation: str
    name: str
    sha256: str
    last_seq: int
    blob: bool  # the archive is in the row (storage 'sqlite'), not a file


@dataclass(frozen=True, slots=True)
class DbSession:
    session_id: str
    session_key: str
    generation: str  # "" before the first rewrite watermark
    max_seq: int | None  # None: no rows (a cold session, or a new one)
    cold: ColdArchive | None
    current: bool = True  # the window its key is in now (not a rewound-away one)


class AgentDb:
    """One open, read-only connection to an agent database."""

    def __init__(self, path: Path) -> None:
        self.path = path
        uri = "file:" + urllib.parse.quote(str(path)) + "?mode=ro"
        try:
            self.db = apsw.Connection(uri, flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
            self.db.set_busy_timeout(_BUSY_MS)
            row = self.db.execute("PRAGMA user_version").fetchone()
            self.version = int(row[0]) if row else 0
        except apsw.Error as exc:
            with contextlib.suppress(Exception):
                self.db.close()
            raise TranscriptDbError(f"cannot read OpenClaw's agent database {path}: {exc}") from exc
        try:
            self.note = self._check_schema()
        except BaseException:
            self.db.close()
            raise

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_schema(self) -> str | None:
        """None, or a note on a newer schema that still has what is read here; an
        older or a different one is an error (never a silent empty source)."""
        missing = []
        for table, columns in _NEEDED.items():
            have = {str(r[1]) for r in self.db.execute(f"PRAGMA table_info({table})")}
            missing += [f"{table}.{c}" for c in sorted(columns - have)]
        if missing or self.version < SCHEMA_VERSION:
            raise TranscriptDbError(
                f"OpenClaw's agent database {self.path} has schema version {self.version}, "
                f"which memindex cannot read (it reads version {SCHEMA_VERSION}"
                + (f"; missing {', '.join(missing)}" if missing else "")
                + "): run 'openclaw doctor --fix' if OpenClaw is older, or update memindex"
            )
        if self.version > SCHEMA_VERSION:
            return (
                f"schema version {self.version} is newer than the {SCHEMA_VERSION} memindex "
                "was written for; the transcript tables it reads are unchanged"
            )
        return None

    def _rows(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        try:
            return list(self.db.execute(sql, args))
        except apsw.Error as exc:
            raise TranscriptDbError(f"reading {self.path}: {exc}") from exc

    def sessions(self) -> list[DbSession]:
        """Every session window with its rows' extent and cold archive (one read)."""
        cold_sql = (
            "SELECT session_id, generation, archive_name, archive_sha256, last_seq, storage "
            "FROM session_transcript_cold_archives"
        )
        cold: dict[str, ColdArchive] = {}
        if self._has_table("session_transcript_cold_archives"):
            for sid, gen, name, sha, last, storage in self._rows(cold_sql):
                cold[str(sid)] = ColdArchive(
                    str(gen), str(name), str(sha), int(last), storage == "sqlite"
                )
        # A window is current when a session key's node points at it (as memory-core
        # lists sessions); a database without nodes (older layout) keeps every window.
        current = (
            "EXISTS (SELECT 1 FROM session_nodes n WHERE n.current_session_id = w.session_id)"
            if self._has_table("session_nodes")
            else "1"
        )
        rows = self._rows(
            "SELECT w.session_id, w.session_key, coalesce(g.generation, ''), "
            "(SELECT max(e.seq) FROM transcript_events e WHERE e.session_id = w.session_id), "
            f"{current} FROM session_windows w LEFT JOIN transcript_rewrite_watermarks g "
            "ON g.session_id = w.session_id ORDER BY w.session_id"
        )
        return [
            DbSession(
                str(s), str(k), str(g), None if m is None else int(m), cold.get(str(s)), bool(c)
            )
            for s, k, g, m, c in rows
        ]

    def forgotten(self, agent: str) -> set[str]:
        """The session ids ``openclaw memory forget`` recorded for ``agent``."""
        if not self._has_table("memory_session_tombstones"):
            return set()
        rows = self._rows(
            "SELECT session_id FROM memory_session_tombstones WHERE lower(agent_id) = lower(?)",
            (agent,),
        )
        return {str(r[0]) for r in rows}

    def archived(self) -> dict[str, tuple[str, str]]:
        """The transcript archives OpenClaw registered: archive file name ->
        (session id, session key)."""
        if not self._has_table("session_transcript_archives"):
            return {}
        rows = self._rows(
            "SELECT archive_name, session_id, session_key FROM session_transcript_archives"
        )
        return {str(n): (str(i), str(k or "")) for n, i, k in rows if n is not None}

    def _has_table(self, name: str) -> bool:
        got = self._rows("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (name,))
        return bool(got)

    def events(self, session_id: str, start: int, limit: int) -> list[tuple[int, str | None]]:
        """Up to ``limit`` events of a session from ``seq`` ``start`` on, as (seq, JSON
        text); the text is None for an event that cannot be decoded."""
        rows = self._rows(
            "SELECT seq, event_json, event_zstd, event_utf8_bytes FROM transcript_events "
            "WHERE session_id = ? AND seq >= ? ORDER BY seq LIMIT ?",
            (session_id, start, limit),
        )
        return [(int(seq), _decode(text, blob, size)) for seq, text, blob, size in rows]

    def events_between(self, session_id: str, first: int, last: int) -> dict[int, str | None]:
        """The events with ``first <= seq <= last`` (for memory_get)."""
        rows = self._rows(
            "SELECT seq, event_json, event_zstd, event_utf8_bytes FROM transcript_events "
            "WHERE session_id = ? AND seq BETWEEN ? AND ? ORDER BY seq",
            (session_id, first, last),
        )
        return {int(seq): _decode(text, blob, size) for seq, text, blob, size in rows}

    def cold_events(self, session_id: str, archive: ColdArchive) -> Iterator[tuple[int, str]]:
        """The events of a cold session, from its archive (verified by its sha256)."""
        if archive.blob:
            got = self._rows(
                "SELECT archive_blob FROM session_transcript_cold_archives WHERE session_id = ?",
                (session_id,),
            )
            if not got or got[0][0] is None:
                raise TranscriptDbError(f"cold archive of session {session_id} is gone")
            data = bytes(got[0][0])
        else:
            name = archive.name
            if "/" in name or name in (".", ".."):
                raise TranscriptDbError(f"cold archive name {name!r} refused")
            file = self.path.parent.parent / "sessions" / "cold" / name
            try:
                data = file.read_bytes()
            except OSError as exc:
                raise TranscriptDbError(f"cold archive {file}: {exc.strerror or exc}") from exc
        if hashlib.sha256(data).hexdigest() != archive.sha256:
            raise TranscriptDbError(f"cold archive {archive.name} does not match its checksum")
        for line in _zstd_lines(data):
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            row = rec.get("row") if isinstance(rec, dict) and rec.get("kind") == "event" else None
            if isinstance(row, dict) and isinstance(row.get("event_json"), str):
                yield int(row["seq"]), str(row["event_json"])

    def stamp(self) -> tuple[int, int] | None:
        """(size, mtime_ns) of the database and its WAL together: what changes when
        the gateway writes (a cheap test before reading anything)."""
        total = 0
        latest = 0
        for suffix in ("", "-wal"):
            try:
                st = os.stat(f"{self.path}{suffix}")
            except OSError:
                continue
            total += st.st_size
            latest = max(latest, st.st_mtime_ns)
        return (total, latest) if latest else None


def _decode(text: Any, blob: Any, size: Any) -> str | None:
    if text is not None:
        return str(text)
    if blob is None:
        return None
    import zstandard

    try:
        limit = int(size) if size else _MAX_EVENT_BYTES
        raw = zstandard.ZstdDecompressor().decompress(bytes(blob), max_output_size=limit)
        if size is not None and len(raw) != int(size):
            return None
        return raw.decode("utf-8")
    except (zstandard.ZstdError, UnicodeDecodeError, ValueError):
        return None


def _zstd_lines(data: bytes) -> Iterator[bytes]:
    import io

    import zstandard

    try:
        with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data)) as reader:
            yield from io.BufferedReader(reader)
    except zstandard.ZstdError as exc:
        raise TranscriptDbError(f"cold archive cannot be decompressed: {exc}") from exc
