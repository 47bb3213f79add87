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
it. ``should_stop`` is asked between batches.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from indexer.config import Config
from indexer.errors import RowRejected
from indexer.indexing.transcripts import SessionReport, transcript_failed, transcript_rows
from indexer.sources.openclaw_db import db_path, is_db_path, render_events
from indexer.sources.sessions import SESSIONS_SOURCE
from indexer.sources.tokenizer import TokenCounter
from indexer.store import STORE_ERRORS, FileState, IndexStore, SessionCursor
from indexer.store.openclaw_db import AgentDb, DbSession

__all__ = ["is_db_path", "sync_db_sessions"]

log = logging.getLogger(__name__)

_BATCH = 256  # events per read and per transaction


def sync_db_sessions(
    store: IndexStore,
    cfg: Config,
    report: SessionReport,
    count: TokenCounter,
    should_stop: Callable[[], bool] | None = None,
) -> None:
    """Bring the index's database transcripts in step with the agent database."""
    path = cfg.transcript_db()
    agent = cfg.agent_name
    mine: dict[str, SessionCursor | None] = {
        p: None for p in store.file_states(SESSIONS_SOURCE) if is_db_path(p)
    }
    mine.update((p, c) for p, c in store.session_cursors().items() if is_db_path(p))
    if path is None or not path.is_file():
        _forget(store, list(mine), report)  # no database (any more): nothing of it is kept
        return
    with AgentDb(path) as db:
        forgotten = db.forgotten(agent)
        report.forgotten |= forgotten
        sessions = [s for s in db.sessions() if s.current and s.session_id not in forgotten]
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
        if cur is not None and cur.head == s.cold.generation and cur.committed > s.cold.last_seq:
            return  # indexed before it went cold
        if cur is not None:
            _restart(store, display, report)
        events: list[tuple[int, str | None]] = list(db.cold_events(s.session_id, s.cold))
        _write(store, cfg, db, s, display, s.cold.generation, events, 0, 0, report, count)
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
        events = db.events(s.session_id, start, _BATCH)
        if not events:
            break
        malformed = _write(
            store, cfg, db, s, display, s.generation, events, start, malformed, report, count
        )
        start = events[-1][0] + 1
        if start <= s.max_seq and should_stop is not None and should_stop():
            report.more = True
            return


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
) -> int:
    """One batch of events and the cursor past it, in one transaction; returns the
    session's count of unreadable events."""
    if s.session_id in db.forgotten(cfg.agent_name):
        raise _Forgotten(s.session_id)  # forgotten while it was read: nothing written
    rendered, lines, bad = render_events(events)
    if bad and not malformed:
        log.warning("%s: %d event(s) could not be decoded and were skipped", display, bad)
    malformed += bad
    rows = transcript_rows(rendered, lines, cfg, count, heading=s.session_key)
    end = (events[-1][0] + 1) if events else start
    cursor = SessionCursor(display, 0, 0, end, end, generation, 0, malformed)
    state = FileState(f"openclaw-db:{generation}:{end}", 0, end)
    with store.transaction():
        report.chunksWritten += store.append_chunks(display, SESSIONS_SOURCE, state, end, rows)
        store.put_session_cursor(cursor)
    report.messages += len(rendered)
    report.malformed += bad
    if rows:
        report.indexed += 1
    return malformed
