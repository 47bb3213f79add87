"""What the transcript sources share: the protocol each implements
(``TranscriptSource``: OpenClaw's agent database, ``db_sessions.AgentDatabase``; the
sessions folder's JSONL files and archives, ``session_files.TranscriptFiles``), the
records it hands the sync (``Listing`` of ``Transcript``s, ``Change``, ``Piece``),
what one sync hands it (``SyncRun``), its report, and the chunks of rendered
messages (``Messages``, ``transcript_rows``), each line mapped back to the
transcript line it came from (a JSONL line; an event's ``seq + 1``) and dated by its
newest message's time.

A source says what it holds now (``listing``), whether a transcript has news past the
index's cursor or must be read again (``changed``), reads what is past the cursor in
bounded pieces, each with the cursor after it (``read``), and turns a piece's raw
records into messages (``render``); ``owns`` names its index paths. The sync
(``session_sync.sync_source``) does the rest for every source alike: the cursors,
removing what a source no longer lists, reading again what changed under its
cursor, writing each piece's chunks with its cursor in one transaction, the
report, and keeping one transcript's trouble to it.
"""

from __future__ import annotations

import enum
import logging
import time
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, tzinfo
from typing import Protocol

from indexer.config import Config
from indexer.config.sections import time_zone
from indexer.errors import RowRejected, TranscriptDbError
from indexer.sources.chunking import chunk_markdown
from indexer.sources.origins import least_trusted, session_kind
from indexer.sources.text import index_text
from indexer.sources.tokenizer import TokenCounter
from indexer.sources.transcripts.messages import Messages
from indexer.sources.transcripts.sessions import SESSIONS_SOURCE, TranscriptFile
from indexer.store import ChunkRow, FileState, IndexStore, SessionCursor

__all__ = [
    "Change",
    "Forgotten",
    "Listing",
    "Piece",
    "Quiet",
    "SessionReport",
    "SyncRun",
    "Tail",
    "Transcript",
    "TranscriptSource",
    "indexed_from",
    "transcript_failed",
    "transcript_rows",
]

log = logging.getLogger(__name__)


@dataclass
class SessionReport:
    """What a sync of the transcripts did."""

    files: int = 0
    indexed: int = 0  # files that got new rows
    messages: int = 0
    malformed: int = 0
    rotated: int = 0
    restarted: int = 0  # truncated or replaced files read again from the start
    removed: int = 0
    deferred: int = 0  # deltas below the thresholds: searchable as tails, committed later
    tails: int = 0  # transcripts whose tail was indexed (searchable, not committed)
    more: bool = False  # the time budget ran out with work left: call again soon
    dbSessions: int = 0  # sessions in OpenClaw's agent database (2026.9+)
    chunksWritten: int = 0
    errors: list[dict[str, str]] = field(default_factory=list)
    # transcripts left where they were after an error (also in ``errors``): tried
    # again every sync; the daemon's ``status`` shows them as the sessions task's error
    failed: list[dict[str, str]] = field(default_factory=list)
    # transcripts read without an error, and those found gone (not in ``to_json``)
    cleared: list[str] = field(default_factory=list)
    # session ids ``openclaw memory forget`` recorded (not in ``to_json``)
    forgotten: set[str] = field(default_factory=set)
    # archives read only in part (damaged, not zstd, past the bound): path -> why
    # (not in ``to_json``: in ``errors`` once, then in status's ``skipped`` while indexed)
    partial: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        out = dict(self.__dict__)
        del out["cleared"]
        del out["partial"]
        out["forgotten"] = len(self.forgotten)
        return out


class Quiet:
    """When the daemon last saw each transcript's size change (monotonic time): a
    delta is quiet once the daemon has seen no change for ``idleFlushMs``."""

    def __init__(self) -> None:
        self._seen: dict[str, tuple[int, int, float]] = {}  # path -> (inode, size, since)
        self._tailed: dict[str, tuple[int, int]] = {}  # path -> (inode, size) of its tail

    def quiet_for(self, f: TranscriptFile, now: float) -> float:
        """Seconds this file has been unchanged as far as the daemon knows (a file
        seen for the first time, or at a new size, starts the count)."""
        prev = self._seen.get(f.display)
        if prev is not None and prev[:2] == (f.ino, f.size):
            return now - prev[2]
        self._seen[f.display] = (f.ino, f.size, now)
        return 0.0

    def new_tail(self, f: TranscriptFile, nbytes: int) -> bool:
        """Whether the file has a tail to index (``nbytes`` past its cursor), or had
        one indexed and changed since (emptied: the old tail must go)."""
        if not nbytes and f.display not in self._tailed:
            return False
        return self._tailed.get(f.display) != (f.ino, f.size)

    def tail_done(self, f: TranscriptFile, nbytes: int) -> None:
        if nbytes:
            self._tailed[f.display] = (f.ino, f.size)
        else:
            self._tailed.pop(f.display, None)

    def forget(self, keep: set[str]) -> None:
        for seen in (self._seen, self._tailed):
            for path in [p for p in seen if p not in keep]:
                del seen[path]


@dataclass
class SyncRun:
    """One transcript sync, as every source sees it."""

    store: IndexStore
    cfg: Config
    report: SessionReport
    count: TokenCounter
    quiet: Quiet
    due_only: bool  # the watcher's pass: a delta waits until large or quiet enough
    skips: list[tuple[str, str]]  # (index path, reason): what a source passed over


@dataclass(frozen=True)
class Transcript:
    """One transcript a source holds now: its index path, the heading its chunks
    carry, and the source's own handle (a file, a database session)."""

    display: str
    handle: object
    heading: str = ""


@dataclass
class Listing:
    """What a source holds now. ``complete``: every transcript it has is listed (an
    indexed one not listed is gone); ``close``: what the listing holds open."""

    transcripts: list[Transcript]
    complete: bool = True
    close: Callable[[], None] = lambda: None
    # transcripts there but not read now (a hard link): what the index holds of them
    # stays (named in status), as for a folder that cannot be listed
    held: frozenset[str] = frozenset()


class Change(enum.Enum):
    NONE = "nothing to read"
    READ = "read past the cursor"
    RESTART = "read again from the start"  # what was indexed of it is not what it holds
    TAIL = "index its uncommitted lines in place; the cursor stays"  # ``tail``


@dataclass(frozen=True)
class Tail:
    """A transcript's complete lines past its cursor, not yet due to be committed:
    indexed at once in place of the chunks past line ``cut`` (the cursor's), cut again
    when they are committed. ``msgs`` None: nothing is past the cursor now (the tail
    indexed before goes)."""

    msgs: Messages | None
    state: FileState | None
    cut: int
    seen: int  # how much was past the cursor when read (the source's own measure)


@dataclass(frozen=True)
class Piece:
    """A bounded piece of a transcript past its cursor: the raw ``records`` (the
    source's ``render`` reads them), the index's ``cursor`` and file ``state`` after
    it (the cursor's ``malformed`` is counted by the sync), the transcript's ``lines``
    indexed then, and ``cut``: the line after which chunks indexed before (a tail)
    go first."""

    records: Sequence[object]
    cursor: SessionCursor
    state: FileState
    lines: int
    cut: int | None = None


class Forgotten(Exception):  # noqa: N818 - a state, not a failure
    """The transcript was forgotten (``openclaw memory forget``) while it was read:
    nothing of it is written, and it leaves the index."""


class TranscriptSource(Protocol):
    """Where transcripts come from (the module doc).

    ``owns``: whether an index path is one of this source's (a source's sync removes
    only its own rows). ``listing``: what it holds now (reporting what it passes over
    in ``run.skips``). ``changed``: what to do with a transcript given the index's
    cursor (None: nothing indexed). ``read``: the pieces past ``cursor``, as many as
    ``should_stop`` lets it (past it, ``run.report.more``); a piece is written before
    the next is read. ``render``: a piece's messages and how many of its records
    could not be read (``warn``: log the first). ``tail`` (when ``changed`` said
    ``TAIL``): the lines past the cursor, rendered, or None when the transcript was
    replaced meanwhile; ``tailed``: the sync wrote it."""

    name: str

    def owns(self, path: str) -> bool: ...

    def listing(self, run: SyncRun) -> Listing: ...

    def changed(self, run: SyncRun, t: Transcript, cursor: SessionCursor | None) -> Change: ...

    def read(
        self,
        run: SyncRun,
        t: Transcript,
        cursor: SessionCursor | None,
        should_stop: Callable[[], bool] | None,
    ) -> Generator[Piece, None, None]: ...

    def render(self, t: Transcript, piece: Piece, *, warn: bool) -> tuple[Messages, int]: ...

    def tail(self, run: SyncRun, t: Transcript, cursor: SessionCursor | None) -> Tail | None: ...

    def tailed(self, run: SyncRun, t: Transcript, tail: Tail) -> None: ...


def indexed_from(store: IndexStore, source: TranscriptSource) -> int:
    """How many transcripts the index holds rows or a cursor of from ``source``: what
    stays indexed while the source cannot be read (it is said so)."""
    held = set(store.file_states(SESSIONS_SOURCE)) | set(store.session_cursors())
    return sum(1 for p in held if source.owns(p))


def transcript_failed(path: str, exc: Exception, report: SessionReport) -> None:
    """One transcript could not be indexed (what it holds, or a bug): its error is
    reported (``status`` shows it) and its cursor stays where it was, so the next
    sync tries it again; the other transcripts are indexed meanwhile."""
    if isinstance(exc, (RowRejected, TranscriptDbError)):  # said what is wrong
        log.warning("transcript %s not indexed: %s", path, exc)
        reason = str(exc)
    else:
        log.exception("error indexing transcript %s", path)
        reason = f"internal error: {type(exc).__name__}: {exc}"
    report.errors.append({"path": path, "reason": reason[:300]})
    report.failed.append(report.errors[-1])


def _offsets(file_lines: Sequence[int]) -> str | None:
    """``ChunkRow.lines`` of a chunk whose text lines are these file lines."""
    first = file_lines[0]
    if file_lines[-1] - first == len(file_lines) - 1:
        return None  # no gap: text line k is file line first + k
    return ",".join(str(n - first) for n in file_lines)


def _pieces(msgs: Messages, size: int) -> Messages:
    """Messages longer than four chunks cut into pieces of about a chunk (at a space
    when there is one), each piece on a line of its own mapped to the message's line:
    a 4 MB message becomes chunks of the configured size, not one 4 MB chunk (a
    message of a few chunks stays whole, as it always was)."""
    if all(len(m) <= 4 * size for m in msgs.texts):
        return msgs
    out = Messages()
    for text, line, when, origin in zip(
        msgs.texts, msgs.lines, msgs.times, msgs.origins, strict=True
    ):
        while len(text) > 4 * size:
            cut = text.rfind(" ", size // 2, size)
            cut = cut if cut > 0 else size
            out.texts.append(text[:cut])
            out.lines.append(line)
            out.times.append(when)
            out.origins.append(origin)
            text = text[cut:].lstrip(" ")
        out.texts.append(text)
        out.lines.append(line)
        out.times.append(when)
        out.origins.append(origin)
    return out


# A message stamped further ahead than this is a clock running ahead (or a bad
# value): the chunk is dated by its other messages (by when it was indexed if it
# has none), else one message stamped 2099 hid its whole chunk from every time a
# question names.
_AHEAD_S = 86_400.0


def _newest(times: Sequence[float | None]) -> float | None:
    now = time.time()
    given = [t for t in times if t is not None]
    known = [t for t in given if t <= now + _AHEAD_S]
    if known:
        return max(known)
    return now if given else None


def transcript_rows(
    msgs: Messages, cfg: Config, count: TokenCounter, heading: str = ""
) -> list[ChunkRow]:
    """The chunks of rendered messages (citations and snippets use their transcript
    lines), each dated by its newest message. A chunk holds one day's messages (in
    ``query.timeZone``): a chunk is dated by one time, and one that ran from a late
    evening into the next morning was found by the later day only."""
    if not msgs:
        return []
    # about 4 characters a token: a message past four chunks is cut into chunk-sized pieces
    msgs = _pieces(msgs, 4 * cfg.chunking.tokens)
    try:
        tz = time_zone(cfg.query.timeZone)
    except ValueError:  # checked when the config loads; a host without zone data
        tz = UTC
    kind = session_kind(heading)
    rows: list[ChunkRow] = []
    for day in _by_day(msgs, tz):
        chunks = chunk_markdown(
            "\n".join(day.texts), count, tokens=cfg.chunking.tokens, overlap=cfg.chunking.overlap
        )
        line_map = day.lines
        rows += [
            ChunkRow(
                line_map[c.start_line - 1],
                line_map[c.end_line - 1],
                heading,
                c.hash,
                c.text,
                index_text(c.text),
                _offsets(line_map[c.start_line - 1 : c.end_line]),
                _newest(day.times[c.start_line - 1 : c.end_line]),
                f"{least_trusted(day.origins[c.start_line - 1 : c.end_line])}:{kind}",
            )
            for c in chunks
        ]
    return rows


def _by_day(msgs: Messages, tz: tzinfo) -> list[Messages]:
    """``msgs`` in runs of one day each (in ``tz``); ``[msgs]`` itself when they are
    of one day. A message with no time, or one stamped ahead (``_AHEAD_S``), stays
    in the run it comes in."""
    cuts: list[int] = []  # where a message of another day than the one before begins
    day: date | None = None
    ahead = time.time() + _AHEAD_S
    for n, when in enumerate(msgs.times):
        if when is None or when > ahead:
            continue
        this = datetime.fromtimestamp(when, tz).date()
        if day is not None and this != day:
            cuts.append(n)
        day = this
    if not cuts:
        return [msgs]
    bounds = [0, *cuts, len(msgs)]
    return [
        Messages(msgs.texts[a:b], msgs.lines[a:b], msgs.times[a:b], msgs.origins[a:b])
        for a, b in zip(bounds, bounds[1:], strict=False)
    ]
