"""Sync for the transcripts in OpenClaw's agent database (``sources.openclaw_db``).

Each session window is one transcript, shown as ``sessions/<agent>/<sessionId>.jsonl``
(the name OpenClaw's own memory index gives it) with line ``seq + 1`` for event
``seq`` — the line a legacy JSONL file imported by ``openclaw doctor --fix`` had.
Its cursor (the store's ``session_cursors`` row) holds the next ``seq`` to read and
the session's rewrite ``generation``:

* new rows (same generation, ``seq`` past the cursor) are appended, a batch of
  events per transaction together with the cursor, so a crash re-reads at most one
  batch and nothing is read twice or skipped;
* a changed generation (rows rewritten in place, deleted and renumbered) drops the
  session's rows and reads it again;
* a session gone from the database (deleted, or removed by retention) leaves the
  index (a deleted one comes back from the archive OpenClaw writes into the sessions
  folder: ``session_sync``); a cold session (rows moved to an archive) keeps what was
  indexed, or is indexed once from its archive;
* only a session key's current window is indexed, as memory-core indexes it: after a
  rewind the old window leaves the index and the new one (which holds the old
  events too) is indexed once;
* a session ``openclaw memory forget`` recorded (``memory_session_tombstones``) is
  never indexed, and leaves the index at the next sync; a batch is not written when
  its session was forgotten while it was being read.

A new delta is indexed at the next sync: the daemon syncs when the database or its
WAL changes (debounced), so a message is searchable seconds after the gateway wrote
it. A batch is at most ``_BATCH`` events and about ``_STEP_BYTES`` of them, and
``should_stop`` is asked between batches, so a session of huge events holds the
writer no longer than a JSONL transcript would.

What cannot be read is passed over and named, the rest indexed: a row whose ``seq``
is not an integer, an event over 4 MiB (counted unreadable, as a JSONL line over the
bound), a cold archive that is a FIFO, a symlink or damaged (that session is left
behind with its reason). A database that is not a regular file, or is gone while
transcripts of it are indexed, is an error of the sync (``status`` shows it) and
what was indexed from it stays.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path

from indexer.config import Config
from indexer.errors import FileUnreadable, FileVanished, RowRejected, TranscriptDbError
from indexer.indexing.transcripts import (
    SessionReport,
    SyncRun,
    transcript_failed,
    transcript_rows,
)
from indexer.sources.archives import archive_session_id, cold_events
from indexer.sources.openclaw_db import db_path, is_db_path, parse_db_path, render_events
from indexer.sources.redaction import redact
from indexer.sources.sessions import SESSIONS_SOURCE
from indexer.sources.tokenizer import TokenCounter
from indexer.store import STORE_ERRORS, FileState, IndexStore, SessionCursor
from indexer.store.openclaw_db import (
    MAX_EVENT_BYTES,
    AgentDb,
    DbSession,
    check_database_file,
    session_facts,
)

__all__ = ["AgentDatabase", "db_facts", "is_db_path", "session_id_of", "sync_db_sessions"]

log = logging.getLogger(__name__)

_BATCH = 256  # events per read and per transaction, at most
_STEP_BYTES = 1024 * 1024  # and about this much of them


class AgentDatabase:
    """OpenClaw's agent database as a ``TranscriptSource``: its transcripts are
    ``sessions/<agent>/<id>.jsonl``."""

    name = "database"

    def owns(self, path: str) -> bool:
        return is_db_path(path)

    def sync(self, run: SyncRun, should_stop: Callable[[], bool] | None) -> None:
        sync_db_sessions(run.store, run.cfg, run.report, run.count, should_stop, run.skips)


def sync_db_sessions(
    store: IndexStore,
    cfg: Config,
    report: SessionReport,
    count: TokenCounter,
    should_stop: Callable[[], bool] | None = None,
    skips: list[tuple[str, str]] | None = None,
) -> None:
    """Bring the index's database transcripts in step with the agent database; rows
    passed over go to ``skips`` (display path, reason)."""
    path = cfg.transcript_db()
    agent = cfg.agent_name
    mine: dict[str, SessionCursor | None] = {
        p: None for p in store.file_states(SESSIONS_SOURCE) if is_db_path(p)
    }
    mine.update((p, c) for p, c in store.session_cursors().items() if is_db_path(p))
    if path is None:
        _forget(store, list(mine), report)  # transcripts off: nothing of them is kept
        return
    try:
        check_database_file(path)
    except FileNotFoundError:
        if mine:  # it was there: say so, and keep what it gave
            raise TranscriptDbError(
                f"OpenClaw's agent database {path} is gone; the {len(mine)} transcript(s) "
                "indexed from it are kept (memindex index --force drops them)"
            ) from None
        return
    except OSError as exc:
        raise TranscriptDbError(f"OpenClaw's agent database {path}: {exc.strerror}") from exc
    with AgentDb(path) as db:
        forgotten = db.forgotten(agent)
        report.forgotten |= forgotten
        listing = db.sessions()
        for sid, why in listing.problems:
            if skips is not None:
                skips.append((f"sessions/{agent}/{safe_name(sid)}.jsonl", why))
        sessions = []
        for s in listing.sessions:
            if not s.indexable or s.session_id in forgotten:
                continue
            if parse_db_path(db_path(agent, s.session_id), agent) != s.session_id:
                # an id memory_get would refuse (a path, NUL, a newline, too long):
                # its citations could not be opened, so it is not indexed
                if skips is not None:
                    why = "a session id memory_get could not open: not indexed"
                    skips.append((f"sessions/{agent}/{safe_name(s.session_id)}.jsonl", why))
                continue
            sessions.append(s)
        report.dbSessions = len(sessions)
        for s in sessions:
            display = db_path(agent, s.session_id)
            cur = mine.pop(display, None)
            if should_stop is not None and should_stop():
                mine.clear()  # not looked at: nothing may be dropped on its account
                break
            try:
                _sync_one(store, cfg, db, s, display, cur, report, count, should_stop)
                report.cleared.append(display)
            except _Forgotten:
                _forget(store, [display], report)
            except RowRejected as exc:  # a value the store cannot hold: the others go on
                transcript_failed(display, exc, report)
            except STORE_ERRORS:
                raise  # the index itself is in trouble: the sync fails
            except Exception as exc:  # this session's trouble only (a cold archive
                transcript_failed(display, exc, report)  # gone, a bug): the others go on
    _forget(store, list(mine), report)


def safe_name(session_id: str) -> str:
    """A session id as a skip may name it: printable, and short."""
    shown = "".join(c if c.isprintable() and c != "/" else "?" for c in session_id)
    return shown if len(shown) <= 80 else shown[:60] + "…"


def path_of_sessions(db: AgentDb) -> Path:
    """The sessions folder beside an agent database (``agents/<id>/sessions``)."""
    return db.path.parent.parent / "sessions"


class _Forgotten(Exception):
    """The session was forgotten (a tombstone appeared) while it was being read."""


def _forget(store: IndexStore, paths: list[str], report: SessionReport) -> None:
    report.cleared.extend(paths)
    if not paths:
        return
    with store.transaction():
        for p in paths:
            store.delete_session(p)
            report.removed += 1


def _sync_one(
    store: IndexStore,
    cfg: Config,
    db: AgentDb,
    s: DbSession,
    display: str,
    cur: SessionCursor | None,
    report: SessionReport,
    count: TokenCounter,
    should_stop: Callable[[], bool] | None,
) -> None:
    if s.max_seq is None and s.cold is not None:  # cold: its rows are in the archive
        _sync_cold(store, cfg, db, s, display, cur, report, count, should_stop)
        return
    last = -1 if s.max_seq is None else s.max_seq  # seq 0 is an event (not "none")
    if cur is not None and (cur.head != s.generation or last < cur.committed - 1):
        _restart(store, display, report)  # rewritten: its rows are not the ones indexed
        cur = None
    if s.max_seq is None:
        return  # a new session with no events yet
    start = cur.committed if cur is not None else 0
    malformed = cur.malformed if cur is not None else 0
    while start <= s.max_seq:
        events = db.events(s.session_id, start, _BATCH, _STEP_BYTES)
        if not events:
            break
        malformed = _write(
            store, cfg, db, s, display, s.generation, events, start, malformed, report, count
        )
        start = events[-1][0] + 1
        if start <= s.max_seq and should_stop is not None and should_stop():
            report.more = True
            return


def _sync_cold(
    store: IndexStore,
    cfg: Config,
    db: AgentDb,
    s: DbSession,
    display: str,
    cur: SessionCursor | None,
    report: SessionReport,
    count: TokenCounter,
    should_stop: Callable[[], bool] | None,
) -> None:
    """A cold session, from its archive, in slices of about ``_STEP_BYTES``: a
    slice's cursor counts the events read (``lines``) without marking the archive
    read (``committed`` 0), so an interrupted read resumes where it stopped."""
    assert s.cold is not None
    resume = 0
    if cur is not None and cur.head == s.cold.generation:
        if cur.committed > s.cold.last_seq:
            return  # read to its end (or indexed before it went cold)
        resume = cur.lines
    elif cur is not None:
        _restart(store, display, report)
    blob = db.cold_blob(s.session_id) if s.cold.blob else None
    events: list[tuple[int, str | None]] = []
    size = 0
    malformed = cur.malformed if cur is not None and resume else 0
    gen = s.cold.generation
    try:
        for ev in cold_events(
            path_of_sessions(db), s.cold.name, s.cold.sha256, blob, MAX_EVENT_BYTES
        ):
            if ev[0] < resume:
                continue
            events.append(ev)
            size += len(ev[1]) if ev[1] else 64
            if size >= _STEP_BYTES:  # never the whole archive in memory
                malformed = _write(
                    store, cfg, db, s, display, gen, events, 0, malformed, report, count,
                    done=False,
                )  # fmt: skip
                events, size = [], 0
                if should_stop is not None and should_stop():
                    report.more = True
                    return
    except FileVanished as exc:  # this session's archive only: the others go on
        where = path_of_sessions(db) / "cold" / s.cold.name
        raise TranscriptDbError(f"cold archive {where}: no such file") from exc
    except FileUnreadable as exc:  # a FIFO, a symlink, damaged, past the bound
        where = path_of_sessions(db) / "cold" / s.cold.name
        raise TranscriptDbError(f"cold archive {where}: {exc.reason}") from exc
    _write(store, cfg, db, s, display, gen, events, 0, malformed, report, count)


def _restart(store: IndexStore, display: str, report: SessionReport) -> None:
    with store.transaction():
        store.delete_session(display)
    report.restarted += 1
    log.info("transcript %s was rewritten in OpenClaw's database: reading it again", display)


def _write(
    store: IndexStore,
    cfg: Config,
    db: AgentDb,
    s: DbSession,
    display: str,
    generation: str,
    events: list[tuple[int, str | None]],
    start: int,
    malformed: int,
    report: SessionReport,
    count: TokenCounter,
    *,
    done: bool = True,
) -> int:
    """One batch of events and the cursor past it, in one transaction; returns the
    session's count of unreadable events. A cold archive is written in slices: all
    but the last with ``done`` False (their cursor does not mark it read)."""
    if s.session_id in db.forgotten(cfg.agent_name):
        raise _Forgotten(s.session_id)  # forgotten while it was read: nothing written
    msgs, bad = render_events(events)
    if bad and not malformed:
        log.warning("%s: %d event(s) could not be decoded and were skipped", display, bad)
    malformed += bad
    # the session key is metadata of the transcript: redacted like its messages
    rows = transcript_rows(msgs, cfg, count, heading=redact(s.session_key))
    end = (events[-1][0] + 1) if events else start
    # a cold archive's slices before the last: events read, the archive not yet done
    cursor = SessionCursor(display, 0, 0, end if done else 0, end, generation, 0, malformed)
    state = FileState(f"openclaw-db:{generation}:{end}", 0, end)
    with store.transaction():
        report.chunksWritten += store.append_chunks(display, SESSIONS_SOURCE, state, end, rows)
        store.put_session_cursor(cursor)
    report.messages += len(msgs)
    report.malformed += bad
    if rows:
        report.indexed += 1
    return malformed


_FORGOTTEN_KEY = "openclaw.forgotten"  # the tombstones last read, kept in the index


def db_facts(
    store: IndexStore, cfg: Config, report: SessionReport
) -> tuple[set[str], dict[str, tuple[str, str]]]:
    """From OpenClaw's agent database: the forgotten session ids and the registered
    archives (name -> session id, key). A forgotten session stays forgotten while the
    database cannot be read: the ids last read are kept in the index's meta."""
    kept = set(json.loads(store.meta_get(_FORGOTTEN_KEY) or "[]"))
    try:
        forgotten, registered = session_facts(cfg.transcript_db(), cfg.agent_name)
    except TranscriptDbError as exc:
        report.errors.append({"path": str(cfg.transcript_db()), "reason": exc.message})
        return kept, {}
    if not forgotten <= kept:
        with store.transaction():
            store.meta_set(_FORGOTTEN_KEY, json.dumps(sorted(forgotten | kept)))
    return forgotten | kept, registered


def session_id_of(name: str, registered: dict[str, tuple[str, str]]) -> str:
    got = registered.get(name)
    return got[0] if got else archive_session_id(name)
