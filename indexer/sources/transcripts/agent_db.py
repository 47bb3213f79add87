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

What it reads is not trusted:

* the database must be a regular file (a FIFO or a symlink in its place is refused:
  opening a FIFO would block the writer for good);
* every statement has a deadline (SQLite's progress handler): a view that recurses
  without end, a huge table scan, is abandoned with an error;
* an event is at most ``MAX_EVENT_BYTES`` (4 MiB, as a JSONL line), stored or
  decompressed: a larger one is never loaded (its length is asked first, and a
  frame decompresses to its declared size at most) and is counted unreadable; a
  batch of events stops at a byte budget, not only a row count;
* a row whose ``seq`` (or an archive's ``last_seq``) is not an integer is passed
  over and named in ``problems``: the other rows and sessions are read.

Cold archive files are read by ``archives`` (safe open, bounded
decompression); this module gives their rows and, for archives kept in the
database, their blob (bounded too).
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

import apsw

from indexer.errors import TranscriptDbError
from indexer.sources.transcripts.agent_db_rows import MAX_EVENT_BYTES, automation_key, decode_event

__all__ = [
    "MAX_EVENT_BYTES",
    "SCHEMA_VERSION",
    "AgentDb",
    "ColdArchive",
    "DbSession",
    "Listing",
    "session_facts",
]

SCHEMA_VERSION = 23  # the agent schema version this reader was written against
_NEEDED = {
    "transcript_events": {"session_id", "seq", "event_json", "event_zstd", "event_utf8_bytes"},
    "session_windows": {"session_id", "session_key"},
    "transcript_rewrite_watermarks": {"session_id", "generation"},
}
MAX_BLOB_BYTES = 256 * 1024 * 1024  # a cold archive kept in the database
_BUSY_MS = 2000
DEADLINE_S = 20.0  # one statement (or one batch's iteration) at most


@dataclass(frozen=True, slots=True)
class ColdArchive:
    """A session's archived (cold) transcript in OpenClaw's database."""

    generation: str
    name: str
    sha256: str
    last_seq: int
    blob: bool  # the archive is in the row (storage 'sqlite'), not a file


@dataclass(frozen=True, slots=True)
class DbSession:
    """A session of OpenClaw's agent database, as a sync reads it."""

    session_id: str
    session_key: str
    generation: str  # "" before the first rewrite watermark
    max_seq: int | None  # None: no rows (a cold session, or a new one)
    cold: ColdArchive | None
    # its key's current window (not a rewound-away one), and no cron, heartbeat or
    # dreaming run: what memory-core indexes, and memindex too
    indexable: bool = True


@dataclass
class Listing:
    """The session windows of a database, and the rows passed over on the way."""

    sessions: list[DbSession]
    problems: list[tuple[str, str]] = field(default_factory=list)  # (session id, why)


def check_database_file(path: Path) -> None:
    """Refuse a database that is not a regular file (a FIFO would block the open, a
    symlink leads elsewhere); FileNotFoundError when it is not there."""
    st = os.lstat(path)
    if not stat.S_ISREG(st.st_mode):
        what = "a symlink" if stat.S_ISLNK(st.st_mode) else "not a regular file"
        raise TranscriptDbError(f"OpenClaw's agent database {path} is {what}: not read")


class AgentDb:
    """One open, read-only connection to an agent database."""

    def __init__(self, path: Path, deadline_s: float | None = None) -> None:
        self.path = path
        self.deadline_s = DEADLINE_S if deadline_s is None else deadline_s
        self._until = 0.0
        try:
            check_database_file(path)
        except OSError as exc:
            raise TranscriptDbError(
                f"cannot read OpenClaw's agent database {path}: {exc.strerror or exc}"
            ) from exc
        uri = "file:" + urllib.parse.quote(str(path)) + "?mode=ro"
        try:
            self.db = apsw.Connection(uri, flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
            self.db.set_busy_timeout(_BUSY_MS)
            self.db.set_progress_handler(self._late, 1000)
            self._until = time.monotonic() + self.deadline_s
            row = self.db.execute("PRAGMA user_version").fetchone()
            self.version = row[0] if row is not None and isinstance(row[0], int) else 0
        except apsw.Error as exc:
            with contextlib.suppress(Exception):
                self.db.close()
            raise TranscriptDbError(f"cannot read OpenClaw's agent database {path}: {exc}") from exc
        try:
            self.note = self._check_schema()
        except BaseException:
            self.db.close()
            raise

    def _late(self) -> bool:
        """SQLite's progress handler: True (abandon the statement) past the deadline."""
        return time.monotonic() > self._until

    def _error(self, exc: apsw.Error) -> TranscriptDbError:
        if isinstance(exc, apsw.InterruptError):
            return TranscriptDbError(
                f"reading {self.path} took over {self.deadline_s:g} s: abandoned "
                "(a view or table that never ends?)"
            )
        return TranscriptDbError(f"reading {self.path}: {exc}")

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
        return list(self._iter(sql, args))

    def _iter(self, sql: str, args: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
        """The rows of one statement, read lazily, within the deadline."""
        self._until = time.monotonic() + self.deadline_s
        try:
            yield from self.db.execute(sql, args)
        except apsw.Error as exc:
            raise self._error(exc) from exc

    def sessions(self) -> Listing:
        """Every session window with its rows' extent and cold archive (a few reads);
        rows that cannot be read are named in ``problems`` and passed over."""
        out = Listing([])
        cold: dict[str, ColdArchive] = {}
        if self._has_table("session_transcript_cold_archives"):
            for sid, gen, name, sha, last, storage in self._rows(
                "SELECT session_id, generation, archive_name, archive_sha256, last_seq, storage "
                "FROM session_transcript_cold_archives"
            ):
                if not isinstance(last, int) or not isinstance(name, str):
                    out.problems.append((str(sid), f"cold archive row with last_seq {last!r}"))
                    continue
                cold[str(sid)] = ColdArchive(str(gen), name, str(sha), last, storage == "sqlite")
        # A window is current when its key's node points at it (as memory-core lists
        # sessions); a database without nodes (older layout) keeps every window. A
        # cron or heartbeat run, or dreaming's narrative, is no memory (memory-core's
        # session-kind gating): its node says so, or its key does.
        nodes = self._has_table("session_nodes")
        current = (
            "EXISTS (SELECT 1 FROM session_nodes n WHERE n.session_key = w.session_key "
            "AND n.current_session_id = w.session_id)"
            if nodes
            else "1"
        )
        kind = (
            "(SELECT CASE WHEN json_valid(n.entry_json) THEN coalesce("
            "json_extract(n.entry_json, '$.sessionKind'), "
            "CASE WHEN json_extract(n.entry_json, '$.generatedByCronRun') THEN 'cron' END, "
            "CASE WHEN json_extract(n.entry_json, '$.generatedByDreamingNarrative') "
            "THEN 'dreaming' END) END FROM session_nodes n WHERE n.session_key = w.session_key)"
            if nodes
            else "NULL"
        )
        rows = self._rows(
            "SELECT w.session_id, w.session_key, coalesce(g.generation, ''), "
            "(SELECT max(e.seq) FROM transcript_events e WHERE e.session_id = w.session_id "
            "AND typeof(e.seq) = 'integer'), "
            f"{current}, {kind} FROM session_windows w LEFT JOIN "
            "transcript_rewrite_watermarks g ON g.session_id = w.session_id ORDER BY w.session_id"
        )
        for sid, key, gen, top, cur, how in rows:
            if not isinstance(sid, str) or not sid:
                out.problems.append((str(sid), "a session window without a text id"))
                continue
            key = str(key or "")
            memory = how not in ("cron", "heartbeat", "dreaming") and not automation_key(key)
            out.sessions.append(
                DbSession(sid, key, str(gen), top, cold.get(sid), bool(cur) and memory)  # indexable
            )
        for sid, n in self._rows(
            "SELECT session_id, count(*) FROM transcript_events "
            "WHERE typeof(seq) != 'integer' GROUP BY session_id"
        ):
            out.problems.append((str(sid), f"{n} event row(s) whose seq is not an integer"))
        return out

    def forgotten(self, agent: str) -> set[str]:
        """The session ids ``openclaw memory forget`` recorded for ``agent`` (or for
        the agent whose folder holds this database: ``agents/<id>/agent/``)."""
        if not self._has_table("memory_session_tombstones"):
            return set()
        folder = self.path.parent.parent.name if self.path.parent.name == "agent" else agent
        rows = self._rows(
            "SELECT session_id FROM memory_session_tombstones "
            "WHERE lower(agent_id) IN (lower(?), lower(?))",
            (agent, folder),
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

    _EVENTS = (
        "SELECT seq, CASE WHEN octet_length(event_json) <= ?1 THEN event_json END, "
        "octet_length(event_json), CASE WHEN octet_length(event_zstd) <= ?1 THEN event_zstd "
        "END, event_utf8_bytes FROM transcript_events WHERE session_id = ?2 "
        "AND typeof(seq) = 'integer' AND seq >= ?3 AND seq <= ?4 ORDER BY seq"
    )

    def events(
        self, session_id: str, start: int, limit: int, max_bytes: int = 1 << 20
    ) -> list[tuple[int, str | None]]:
        """Events of a session from ``seq`` ``start`` on, as (seq, JSON text): at most
        ``limit`` of them and about ``max_bytes`` (always at least one); the text is
        None for an event that cannot be read or is over ``MAX_EVENT_BYTES``."""
        out: list[tuple[int, str | None]] = []
        size = 0
        args = (MAX_EVENT_BYTES, session_id, start, (1 << 62))
        for seq, text, text_len, blob, declared in self._iter(self._EVENTS, args):
            decoded = decode_event(text, text_len, blob, declared)
            out.append((seq, decoded))
            size += len(decoded) if decoded else 64
            if len(out) >= limit or size >= max_bytes:
                break
        return out

    def events_between(
        self, session_id: str, first: int, last: int, max_bytes: int = 64 << 20
    ) -> dict[int, str | None]:
        """The events with ``first <= seq <= last`` (for memory_get), until about
        ``max_bytes`` of them were read."""
        out: dict[int, str | None] = {}
        size = 0
        args = (MAX_EVENT_BYTES, session_id, first, last)
        for seq, text, text_len, blob, declared in self._iter(self._EVENTS, args):
            decoded = decode_event(text, text_len, blob, declared)
            out[seq] = decoded
            size += len(decoded) if decoded else 64
            if size >= max_bytes:
                break
        return out

    def cold_blob(self, session_id: str) -> bytes:
        """A cold archive kept in the database (storage 'sqlite'), at most
        ``MAX_BLOB_BYTES`` (never loaded when larger)."""
        got = self._rows(
            "SELECT CASE WHEN length(archive_blob) <= ? THEN archive_blob END, "
            "length(archive_blob) FROM session_transcript_cold_archives WHERE session_id = ?",
            (MAX_BLOB_BYTES, session_id),
        )
        if not got or got[0][1] is None:
            raise TranscriptDbError(f"cold archive of session {session_id} is gone")
        if got[0][0] is None:
            raise TranscriptDbError(
                f"cold archive of session {session_id} is {got[0][1]} bytes, over "
                f"{MAX_BLOB_BYTES // (1024 * 1024)} MiB: not read"
            )
        return bytes(got[0][0])

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


def session_facts(path: Path | None, agent: str) -> tuple[set[str], dict[str, tuple[str, str]]]:
    """(forgotten session ids, registered archives: name -> (session id, key)) of the
    agent database at ``path``: empty when there is none; TranscriptDbError when one
    is there and cannot be read (a caller must not take that for "nothing forgotten")."""
    if path is None:
        return set(), {}
    try:
        check_database_file(path)
    except FileNotFoundError:
        return set(), {}
    except OSError as exc:
        raise TranscriptDbError(f"OpenClaw's agent database {path}: {exc.strerror}") from exc
    with AgentDb(path) as db:
        return db.forgotten(agent), db.archived()
