"""``memory_get`` for transcripts: lines of a sessions-folder transcript (a JSONL file,
a rotated one, a deleted session's archive) or of a session in OpenClaw's agent
database, numbered as the index cites them, rendered as search shows them (or the
events themselves with ``raw``), secrets redacted either way, forgotten sessions
never read back."""

from __future__ import annotations

from indexer.api import GetRequest, GetResponse
from indexer.config import Config
from indexer.errors import NotFound, PathRefused, TranscriptDbError
from indexer.sources import safefs
from indexer.sources.files import lines_result, reading
from indexer.sources.transcripts.agent_db import MAX_EVENT_BYTES, AgentDb, session_facts
from indexer.sources.transcripts.agent_db_render import is_db_path, parse_db_path, render_events
from indexer.sources.transcripts.archives import (
    archive_blocks,
    cold_events,
    is_archive_name,
    session_ids_of,
)
from indexer.sources.transcripts.line_reads import MAX_LINE_BYTES, read_lines, read_lines_from
from indexer.sources.transcripts.sessions import (
    SESSIONS_SOURCE,
    is_transcript_name,
    raw_event_line,
    rendered_line,
)

__all__ = ["transcript_lines"]


def transcript_lines(cfg: Config, req: GetRequest, kept: frozenset[str]) -> GetResponse | None:
    """The memory_get answer for a transcript's path, None for any other path;
    ``kept``: sessions forgotten before, as the index keeps them (a database restored
    from before a forget no longer says)."""
    if is_db_path(req.path):
        return _db_transcript_lines(cfg, req, kept)
    if req.path.startswith(SESSIONS_SOURCE + "/"):
        return _file_transcript_lines(cfg, req, kept)
    return None


def _file_transcript_lines(cfg: Config, req: GetRequest, kept: frozenset[str]) -> GetResponse:
    """Lines of a transcript, one per JSONL line (citations use these numbers):
    rendered as search shows them, or the events themselves with ``raw``; secrets
    redacted in the decoded text either way. Streamed: any size, and a line that is
    not UTF-8 spoils only itself."""
    path = req.path
    name = path[len(SESSIONS_SOURCE) + 1 :]
    if (
        "\x00" in name
        or not safefs.valid_utf8(name)
        or not is_transcript_name(name, cfg.sessions.includeRotated)
    ):
        raise PathRefused(f"refused path {path!r}: not a session transcript name")
    directory = cfg.sessions_dir()
    if directory is None:
        raise PathRefused(f"refused path {path!r}: sessions are disabled for this agent")
    try:  # a forgotten session is not read back (`openclaw memory forget`)
        forgotten, registered = session_facts(cfg.transcript_db(), cfg.agent_name)
    except TranscriptDbError as exc:
        raise PathRefused(f"{path}: cannot tell whether it was forgotten ({exc.message})") from exc
    if session_ids_of(name, registered) & (forgotten | kept):
        raise NotFound(f"{path}: no such transcript")
    links = cfg.limits.allowHardLinks
    # raw lines are read whole (a message is at most MAX_LINE_BYTES) and rendered
    # before the byte limit applies: a message over it comes back cut, not empty
    budget = 4 * cfg.limits.maxGetBytes + MAX_LINE_BYTES
    with reading(path), safefs.opened(directory, (name,), exact=True, links=links) as (fd, _):
        if is_archive_name(name):  # a deleted session's zstd archive: bounded
            got = read_lines_from(archive_blocks(fd, strict=False), req.start, req.lines, budget)
        else:
            got = read_lines(fd, req.start, req.lines, budget)
    show = raw_event_line if req.raw else rendered_line
    picked: list[str] = []
    size = 0
    for line in got.lines:
        shown = show(line)
        if not shown and len(line) > MAX_LINE_BYTES:  # as the index: a line too long to read
            shown = f"[a line of over {MAX_LINE_BYTES:,} bytes: not indexed; --raw shows its start]"
        raw = shown.encode("utf-8")
        if picked and size + len(raw) + 1 > cfg.limits.maxGetBytes:
            return lines_result(path, picked, req.start, got.total, True)
        if len(raw) > cfg.limits.maxGetBytes:  # one message alone over the limit: cut
            picked.append(raw[: cfg.limits.maxGetBytes].decode("utf-8", "ignore"))
            return lines_result(path, picked, req.start, got.total, True)
        picked.append(shown)
        size += len(raw) + 1
    # a read cut inside the last line (shown as too long): nothing was left out after it
    more = got.truncated and req.start + len(picked) <= got.total
    return lines_result(path, picked, req.start, got.total, more)


_DB_LINES = 5000  # events read for one memory_get at most (then: truncated, nextFrom)


def _db_transcript_lines(cfg: Config, req: GetRequest, kept: frozenset[str]) -> GetResponse:
    """Lines of a transcript in OpenClaw's agent database: line ``n`` is event
    ``seq = n - 1``, shown as search shows it (or the event itself with ``raw``);
    an event that is no message is an empty line."""
    path = req.path
    sid = parse_db_path(path, cfg.agent_name)
    if sid is None:
        raise PathRefused(
            f"refused path {path!r}: not a transcript of agent {cfg.agent_name} "
            "(sessions/<agent>/<sessionId>.jsonl)"
        )
    db_file = cfg.transcript_db()
    if db_file is None or not db_file.is_file():
        raise NotFound(f"{path}: no OpenClaw agent database for agent {cfg.agent_name}")
    first = req.start - 1
    want = min(req.lines or _DB_LINES, _DB_LINES)
    budget = 4 * cfg.limits.maxGetBytes + MAX_EVENT_BYTES  # raw events read, at most
    with AgentDb(db_file) as db:
        session = next((s for s in db.sessions().sessions if s.session_id == sid), None)
        if session is None or not session.indexable or sid in db.forgotten(cfg.agent_name) | kept:
            # as the index has it: a forgotten session, an old window, a cron run
            raise NotFound(f"{path}: no such session in {db_file}")
        got: dict[int, str | None] = {}
        size = 0
        if session.max_seq is None and session.cold is not None:
            cold = session.cold
            blob = db.cold_blob(sid) if cold.blob else None
            total = cold.last_seq + 1
            archive = db_file.parent.parent / "sessions"
            for q, t in cold_events(archive, cold.name, cold.sha256, blob, MAX_EVENT_BYTES):
                if q >= first + want or size >= budget:
                    break
                if q >= first:
                    got[q] = t
                    size += len(t) if t else 64
        else:
            total = (session.max_seq or -1) + 1
            got = db.events_between(sid, first, first + want - 1, budget)
    # read up to here (the byte budget may end the read early: the rest is nextFrom)
    end = min(total, first + want)
    if got and sum(len(t) if t else 64 for t in got.values()) >= budget:
        end = min(end, max(got) + 1)
    return _db_lines(cfg, req, got, range(first, end), total, first + want)


def _db_lines(
    cfg: Config,
    req: GetRequest,
    got: dict[int, str | None],
    seqs: range,
    total: int,
    want_end: int,
) -> GetResponse:
    """The events ``got`` of ``seqs`` as memory_get's lines (rendered, or raw), within
    ``limits.maxGetBytes``; ``want_end``: where the request wanted to stop."""
    picked: list[str] = []
    size = 0
    for seq in seqs:
        text = got.get(seq)
        if req.raw:
            line = raw_event_line(text) if text is not None else ""
        else:
            rendered = render_events([(seq, text)])[0].texts
            line = rendered[0] if rendered else ""
        raw = line.encode("utf-8")
        if picked and size + len(raw) + 1 > cfg.limits.maxGetBytes:
            return lines_result(req.path, picked, req.start, total, True)
        if len(raw) > cfg.limits.maxGetBytes:  # one line alone over the limit: cut
            picked.append(raw[: cfg.limits.maxGetBytes].decode("utf-8", "ignore"))
            return lines_result(req.path, picked, req.start, total, True)
        picked.append(line)
        size += len(raw) + 1
    if seqs.stop < min(total, want_end):
        return lines_result(req.path, picked, req.start, total, True)
    more = req.lines is None and seqs.start + len(picked) < total
    return lines_result(req.path, picked, req.start, total, more)
