"""Sync for the transcripts in OpenClaw's agent database (``sources.transcripts.agent_db``).

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
  folder: ``session_files``); a cold session (rows moved to an archive) keeps what was
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

import hashlib
import json
import logging
from collections.abc import Callable, Generator
from dataclasses import dataclass
from pathlib import Path

from indexer.config import Config
from indexer.errors import FileUnreadable, FileVanished, TranscriptDbError
from indexer.indexing.transcripts.source import (
    Change,
    Forgotten,
    Listing,
    Piece,
    SessionReport,
    SyncRun,
    Tail,
    Transcript,
    indexed_from,
)
from indexer.sources.redaction import redact
from indexer.sources.transcripts.agent_db import (
    MAX_EVENT_BYTES,
    AgentDb,
    DbSession,
    check_database_file,
    session_facts,
)
from indexer.sources.transcripts.agent_db_render import (
    db_path,
    is_db_path,
    parse_db_path,
    render_events,
)
from indexer.sources.transcripts.archives import cold_events
from indexer.sources.transcripts.messages import Messages
from indexer.store import FileState, IndexStore, SessionCursor
from indexer.store.records import FORGOTTEN

__all__ = ["AgentDatabase", "db_facts", "is_db_path"]

log = logging.getLogger(__name__)

_BATCH = 256  # events per read and per transaction, at most
_STEP_BYTES = 1024 * 1024  # and about this much of them


@dataclass(frozen=True)
class _Session:
    """A listed session: the open database and the session's row."""

    db: AgentDb
    s: DbSession


class AgentDatabase:
    """OpenClaw's agent database as a ``TranscriptSource``: its transcripts are
    ``sessions/<agent>/<id>.jsonl``, one per session window (the module doc)."""

    name = "database"

    def owns(self, path: str) -> bool:
        return is_db_path(path)

    def listing(self, run: SyncRun) -> Listing:
        store, cfg, report = run.store, run.cfg, run.report
        path = cfg.transcript_db()
        agent = cfg.agent_name
        if path is None:
            return Listing([])  # transcripts off: nothing of them is kept
        try:
            check_database_file(path)
        except FileNotFoundError:
            kept = indexed_from(store, self)
            if kept:  # it was there: say so, and keep what it gave
                raise TranscriptDbError(
                    f"OpenClaw's agent database {path} is gone; the {kept} "
                    "transcript(s) indexed from it are kept (memindex index --force drops them)"
                ) from None
            return Listing([])
        except OSError as exc:
            raise TranscriptDbError(f"OpenClaw's agent database {path}: {exc.strerror}") from exc
        db = AgentDb(path).__enter__()
        try:
            listed = self._sessions(db, agent, report, run.skips, store)
        except BaseException:
            db.__exit__(None, None, None)
            raise
        report.dbSessions = len(listed)
        return Listing(
            [
                Transcript(db_path(agent, s.session_id), _Session(db, s), redact(s.session_key))
                for s in listed
            ],  # the session key is metadata of the transcript: redacted like its messages
            close=lambda: db.__exit__(None, None, None),
        )

    @staticmethod
    def _sessions(
        db: AgentDb,
        agent: str,
        report: SessionReport,
        skips: list[tuple[str, str]],
        store: IndexStore,
    ) -> list[DbSession]:
        """The sessions to index: the current windows, not forgotten (now or before),
        with an id memory_get can open; what is passed over goes to ``skips``."""
        forgotten = remembered_forgotten(store, db.forgotten(agent))
        report.forgotten |= forgotten
        listing = db.sessions()
        for sid, why in listing.problems:
            skips.append((f"sessions/{agent}/{safe_name(sid)}.jsonl", why))
        sessions = []
        for s in listing.sessions:
            if not s.indexable or s.session_id in forgotten:
                continue
            if parse_db_path(db_path(agent, s.session_id), agent) != s.session_id:
                # an id memory_get would refuse (a path, NUL, a newline, too long):
                # its citations could not be opened, so it is not indexed
                why = "a session id memory_get could not open: not indexed"
                skips.append((f"sessions/{agent}/{safe_name(s.session_id)}.jsonl", why))
                continue
            sessions.append(s)
        return sessions

    def changed(self, run: SyncRun, t: Transcript, cursor: SessionCursor | None) -> Change:
        s = _session(t).s
        if s.max_seq is None and s.cold is not None:  # cold: its rows are in the archive
            if cursor is not None and cursor.head == s.cold.generation:
                # read to its end (or indexed before it went cold), or resumed
                return Change.NONE if cursor.committed > s.cold.last_seq else Change.READ
            if cursor is not None:
                _rewritten(t.display)
                return Change.RESTART
            return Change.READ
        last = -1 if s.max_seq is None else s.max_seq  # seq 0 is an event (not "none")
        if cursor is not None:
            generation, _, mark = cursor.head.partition("#")
            rewritten = generation != s.generation or last < cursor.committed - 1
            if not rewritten and mark and cursor.committed > 0:
                # the same id and generation, rows up to the cursor: are they the rows
                # indexed? (a session deleted and added again, a database restored)
                seen = _session(t).db.events(s.session_id, cursor.committed - 1, 1)
                rewritten = not seen or _mark(seen[0]) != mark
            if rewritten:
                _rewritten(t.display)  # its rows are not the ones indexed
                return Change.RESTART
        return Change.NONE if s.max_seq is None else Change.READ  # (no events yet)

    def read(
        self,
        run: SyncRun,
        t: Transcript,
        cursor: SessionCursor | None,
        should_stop: Callable[[], bool] | None,
    ) -> Generator[Piece, None, None]:
        got = _session(t)
        if got.s.max_seq is None:
            if got.s.cold is None:  # its rows all gone, and no archive: it holds nothing
                log.info("transcript %s has no events left: nothing of it is indexed", t.display)
                return
            yield from _cold_pieces(run, t, got, cursor, should_stop)
            return
        s, db, agent = got.s, got.db, run.cfg.agent_name
        assert s.max_seq is not None
        start = cursor.committed if cursor is not None else 0
        while start <= s.max_seq:
            events = db.events(s.session_id, start, _BATCH, _STEP_BYTES)
            if not events:
                break
            _not_forgotten(db, s, agent)
            yield _piece(t.display, s.generation, events, start, hot=True)
            start = events[-1][0] + 1
            if start <= s.max_seq and should_stop is not None and should_stop():
                run.report.more = True
                return

    def render(self, t: Transcript, piece: Piece, *, warn: bool) -> tuple[Messages, int]:
        msgs, bad = render_events(piece.records)  # type: ignore[arg-type]
        if bad and warn:
            log.warning("%s: %d event(s) could not be decoded and were skipped", t.display, bad)
        return msgs, bad

    def tail(self, run: SyncRun, t: Transcript, cursor: SessionCursor | None) -> Tail | None:
        return None  # ``changed`` never says TAIL: a database row is whole once written

    def tailed(self, run: SyncRun, t: Transcript, tail: Tail) -> None:
        return None


def _session(t: Transcript) -> _Session:
    assert isinstance(t.handle, _Session)
    return t.handle


def _rewritten(display: str) -> None:
    log.info("transcript %s was rewritten in OpenClaw's database: reading it again", display)


def _not_forgotten(db: AgentDb, s: DbSession, agent: str) -> None:
    """Forgotten while it was read: nothing more is written (the sync drops it)."""
    if s.session_id in db.forgotten(agent):
        raise Forgotten(s.session_id)


def _piece(
    display: str,
    generation: str,
    events: list[tuple[int, str | None]],
    start: int,
    *,
    done: bool = True,
    hot: bool = False,
) -> Piece:
    """A batch of events and the cursor past it. A cold archive is read in slices:
    all but the last with ``done`` False (their cursor does not mark it read). A hot
    batch's cursor also holds the ``_mark`` of its last event."""
    end = (events[-1][0] + 1) if events else start
    head = f"{generation}#{_mark(events[-1])}" if events and hot else generation
    cursor = SessionCursor(display, 0, 0, end if done else 0, end, head, 0, 0)
    return Piece(events, cursor, FileState(f"openclaw-db:{generation}:{end}", 0, end), end)


def _mark(event: tuple[int, str | None]) -> str:
    """What tells the last event indexed from another at its place: its seq and a
    hash of its text."""
    seq, text = event
    return hashlib.sha256(f"{seq}:{text}".encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _cold_pieces(
    run: SyncRun,
    t: Transcript,
    got: _Session,
    cur: SessionCursor | None,
    should_stop: Callable[[], bool] | None,
) -> Generator[Piece, None, None]:
    """A cold session, from its archive, in slices of about ``_STEP_BYTES``: a
    slice's cursor counts the events read (``lines``) without marking the archive
    read (``committed`` 0), so an interrupted read resumes where it stopped."""
    db, s = got.db, got.s
    assert s.cold is not None
    resume = cur.lines if cur is not None else 0  # (a cursor of this cold generation)
    blob = db.cold_blob(s.session_id) if s.cold.blob else None
    events: list[tuple[int, str | None]] = []
    size = 0
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
                _not_forgotten(db, s, run.cfg.agent_name)
                yield _piece(t.display, gen, events, 0, done=False)
                events, size = [], 0
                if should_stop is not None and should_stop():
                    run.report.more = True
                    return
    except FileVanished as exc:  # this session's archive only: the others go on
        where = path_of_sessions(db) / "cold" / s.cold.name
        raise TranscriptDbError(f"cold archive {where}: no such file") from exc
    except FileUnreadable as exc:  # a FIFO, a symlink, damaged, past the bound
        where = path_of_sessions(db) / "cold" / s.cold.name
        raise TranscriptDbError(f"cold archive {where}: {exc.reason}") from exc
    _not_forgotten(db, s, run.cfg.agent_name)
    yield _piece(t.display, gen, events, 0)


def safe_name(session_id: str) -> str:
    """A session id as a skip may name it: printable, and short."""
    shown = "".join(c if c.isprintable() and c != "/" else "?" for c in session_id)
    return shown if len(shown) <= 80 else shown[:60] + "…"


def path_of_sessions(db: AgentDb) -> Path:
    """The sessions folder beside an agent database (``agents/<id>/sessions``)."""
    return db.path.parent.parent / "sessions"


def db_facts(
    store: IndexStore, cfg: Config, report: SessionReport
) -> tuple[set[str], dict[str, tuple[str, str]]]:
    """From OpenClaw's agent database: the forgotten session ids and the registered
    archives (name -> session id, key). A forgotten session stays forgotten while the
    database cannot be read: the ids last read are kept in the index's meta."""
    try:
        forgotten, registered = session_facts(cfg.transcript_db(), cfg.agent_name)
    except TranscriptDbError as exc:
        report.errors.append({"path": str(cfg.transcript_db()), "reason": exc.message})
        return remembered_forgotten(store, set()), {}
    return remembered_forgotten(store, forgotten), registered


def remembered_forgotten(store: IndexStore, read: set[str]) -> set[str]:
    """The sessions forgotten: those the database says now (``read``) and every one it
    said before (kept in the index's meta), so that a backup of the database restored
    from before a forget, or a database that cannot be read, brings none back."""
    kept = set(json.loads(store.meta_get(FORGOTTEN) or "[]"))
    if not read <= kept:
        with store.transaction():
            store.meta_set(FORGOTTEN, json.dumps(sorted(read | kept)))
    return read | kept
