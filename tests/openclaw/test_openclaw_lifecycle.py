"""A session's lifecycle in OpenClaw 2026.9 as memindex follows it, the way
OpenClaw's memory-core does (the real gateway doing each of these:
tests/openclaw/test_openclaw_parity.py):

* a rewind starts a new window of the session key (holding the old events too):
  only the key's current window is indexed, once;
* ``openclaw memory forget`` records the session in ``memory_session_tombstones``:
  it leaves the index and is never indexed again, from the database, a JSONL file
  or an archive;
* ``openclaw sessions delete`` moves the session into a zstd archive in the
  sessions folder: it stays searchable from there, and ``memory_get`` reads it;
  an archive that decompresses without end is read to a bound."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import zstandard
from test_openclaw_db import AgentDbFixture, _cfg, _found, gw, message, state

from indexer.engine import AgentIndex
from indexer.errors import NotFound, PathRefused, TranscriptDbError
from indexer.sources.transcripts import archives

__all__ = ["gw", "state"]  # fixtures used here

LIFECYCLE_DDL = """
CREATE TABLE session_nodes (session_key TEXT PRIMARY KEY, current_session_id TEXT,
  entry_json TEXT NOT NULL DEFAULT '{}', updated_at INTEGER NOT NULL DEFAULT 0);
CREATE TABLE memory_session_tombstones (session_id TEXT NOT NULL PRIMARY KEY,
  agent_id TEXT NOT NULL, reason TEXT NOT NULL, created_at INTEGER NOT NULL) STRICT;
CREATE TABLE session_transcript_archives (session_id TEXT NOT NULL, generation TEXT,
  session_key TEXT, reason TEXT, archive_name TEXT UNIQUE, created_at INTEGER);
"""


def _lifecycle(gw: AgentDbFixture) -> AgentDbFixture:
    list(gw.db.execute(LIFECYCLE_DDL))
    return gw


def _point(gw: AgentDbFixture, key: str, sid: str) -> None:
    with gw.db:
        gw.db.execute(
            "INSERT INTO session_nodes(session_key, current_session_id) VALUES(?, ?) "
            "ON CONFLICT(session_key) DO UPDATE SET current_session_id = "
            "excluded.current_session_id",
            (key, sid),
        )


def _forget(gw: AgentDbFixture, sid: str, agent: str = "main") -> None:
    with gw.db:
        gw.db.execute(
            "INSERT INTO memory_session_tombstones VALUES(?, ?, 'forgotten', 0)", (sid, agent)
        )


def test_a_rewound_session_is_indexed_once_from_its_current_window(
    tmp_path: Path, state: Path, gw: AgentDbFixture
) -> None:
    _lifecycle(gw)
    said = message("user", "The harbour gate code is GATE-5150.")
    gw.session("w1", "agent:main:main")
    gw.append("w1", said, message("assistant", "Noted."))
    _point(gw, "agent:main:main", "w1")
    with AgentIndex(_cfg(tmp_path, state)) as idx:
        idx.sync()
        assert [p for p, *_ in _found(idx, "GATE-5150")] == ["sessions/main/w1.jsonl"]
        # the rewind: a new window with the old events and a leaf, the key moves to it
        gw.session("w2", "agent:main:main", generation="g2")
        gw.append("w2", said, message("assistant", "Noted."), json.dumps({"type": "leaf"}))
        _point(gw, "agent:main:main", "w2")
        idx.sync()
        assert [p for p, *_ in _found(idx, "GATE-5150")] == ["sessions/main/w2.jsonl"]
        assert idx.status()["sources"]["sessions"]["files"] == 1


def test_a_forgotten_session_leaves_the_index_and_stays_out(
    tmp_path: Path, state: Path, gw: AgentDbFixture
) -> None:
    _lifecycle(gw)
    for sid, code in (("keep", "KEEP-1001"), ("gone", "GONE-2002")):
        gw.session(sid, f"agent:main:telegram:direct:{sid}")
        gw.append(sid, message("user", f"My locker code is {code}."))
        _point(gw, f"agent:main:telegram:direct:{sid}", sid)
    sessions = state / "agents/main/sessions"
    legacy = message("user", "Legacy note LEGACY-3003.")
    (sessions / "old.jsonl.reset.2026-01-01T00-00-00.000Z").write_text(legacy + "\n")
    with AgentIndex(_cfg(tmp_path, state)) as idx:
        idx.sync()
        assert _found(idx, "GONE-2002") and _found(idx, "LEGACY-3003")
        _forget(gw, "gone")
        _forget(gw, "old")
        _forget(gw, "keep", agent="ops")  # another agent's tombstone: not ours
        rep = idx.sync()
        assert rep.sessions is not None and rep.sessions["forgotten"] == 2
        assert _found(idx, "GONE-2002") == [] and _found(idx, "LEGACY-3003") == []
        assert _found(idx, "KEEP-1001")
        gw.append("gone", message("user", "More about GONE-2002."))
        idx.sync(force=True)
        assert _found(idx, "GONE-2002") == []


def _archive(sessions: Path, sid: str, lines: list[str], name: str | None = None) -> Path:
    name = name or f"{sid}.jsonl.deleted.2026-11-27T08-00-00.000Z.{'a' * 32}.zst"
    data = zstandard.ZstdCompressor().compress("".join(x + "\n" for x in lines).encode())
    (sessions / name).write_bytes(data)
    return sessions / name


def test_a_deleted_session_is_found_in_its_archive(
    tmp_path: Path, state: Path, gw: AgentDbFixture
) -> None:
    _lifecycle(gw)
    said = message("user", "The venue code is VENUE-4477.")
    gw.session("d1", "agent:main:telegram:direct:9")
    gw.append("d1", said)
    _point(gw, "agent:main:telegram:direct:9", "d1")
    sessions = state / "agents/main/sessions"
    with AgentIndex(_cfg(tmp_path, state)) as idx:
        idx.sync()
        assert _found(idx, "VENUE-4477")[0][0] == "sessions/main/d1.jsonl"
        # `openclaw sessions delete`: rows gone, the archive written beside
        gw.delete("d1")
        with gw.db:
            gw.db.execute("DELETE FROM session_nodes WHERE current_session_id='d1'")
        header = json.dumps({"type": "session", "id": "d1"})
        path = _archive(sessions, "d1", [header, said])
        with gw.db:
            gw.db.execute(
                "INSERT INTO session_transcript_archives VALUES('d1', 'g1', "
                "'agent:main:telegram:direct:9', 'deleted', ?, 0)",
                (path.name,),
            )
        idx.sync()
        display = f"sessions/{path.name}"
        assert _found(idx, "VENUE-4477") == [(display, 2, 2)]
        got = idx.get(display, start=2, lines=1)
        assert got["text"] == "User: The venue code is VENUE-4477." and got["totalLines"] == 2
        # forgotten by its registered id: gone from the archive too
        _forget(gw, "d1")
        idx.sync()
        assert _found(idx, "VENUE-4477") == []


@pytest.mark.slow  # ~2 s of CPU
def test_an_archive_that_expands_without_end_is_read_to_a_bound(
    tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(archives, "MAX_ARCHIVE_BYTES", 4 * 1024 * 1024)
    sessions = state / "agents/main/sessions"
    first = message("user", "Before the flood: MARKER-8080.")
    flood = message("user", "x" * 1000)
    cctx = zstandard.ZstdCompressor()
    data = cctx.compress((first + "\n" + (flood + "\n") * 20000).encode())  # ~20 MB
    name = "bomb.jsonl.deleted.2026-11-27T08-00-00.000Z.zst"
    (sessions / name).write_bytes(data)
    assert len(data) < 1024 * 1024
    with AgentIndex(_cfg(tmp_path, state)) as idx:
        rep = idx.sync()
        assert [(p, a) for p, a, _ in _found(idx, "MARKER-8080")] == [(f"sessions/{name}", 1)]
        assert rep.sessions is not None
        assert any("decompresses past 4 MiB" in e["reason"] for e in rep.sessions["errors"])
        got = idx.get(f"sessions/{name}", start=1, lines=1)
        assert "MARKER-8080" in got["text"]


def test_forgotten_stays_forgotten_when_the_database_cannot_be_read(
    tmp_path: Path, state: Path, gw: AgentDbFixture
) -> None:
    """A forgotten session is not read back by memory_get, and a database that cannot
    be read for a while (locked, damaged) does not bring its transcript back."""
    _lifecycle(gw)
    sessions = state / "agents/main/sessions"
    (sessions / "old.jsonl").write_text(message("user", "Legacy note LEGACY-3003.") + "\n")
    gw.session("db1", "agent:main:telegram:direct:1")
    gw.append("db1", message("user", "the PUMA-9 den"))
    _point(gw, "agent:main:telegram:direct:1", "db1")
    with AgentIndex(_cfg(tmp_path, state)) as idx:
        idx.sync()
        assert _found(idx, "LEGACY-3003") and _found(idx, "PUMA-9")
        _forget(gw, "old")
        _forget(gw, "db1")
        idx.sync()
        assert _found(idx, "LEGACY-3003") == [] and _found(idx, "PUMA-9") == []
        for path in ("sessions/old.jsonl", "sessions/main/db1.jsonl"):
            with pytest.raises(NotFound):
                idx.get(path)
        gw.db.close()
        for suffix in ("-wal", "-shm"):
            Path(f"{gw.path}{suffix}").unlink(missing_ok=True)
        gw.path.write_bytes(b"not a database any more" * 100)
        (sessions / "old.jsonl").write_text(message("user", "Legacy note LEGACY-3003.") + "\n")
        for force in (False, True):  # the file changed: read it again? not while forgotten
            with pytest.raises(TranscriptDbError):
                idx.sync(force=force)
            assert _found(idx, "LEGACY-3003") == []
        with pytest.raises(PathRefused):
            idx.get("sessions/old.jsonl")  # cannot tell: not read


def test_a_forgotten_sessions_thread_and_fork_transcripts_are_forgotten_too(
    tmp_path: Path, state: Path, gw: AgentDbFixture
) -> None:
    """OpenClaw names a session's other files after it (a thread's
    ``<id>-topic-<thread>.jsonl``, a fork's ``<time>_<id>.jsonl``, and their archives):
    forgetting the session keeps every one of them out of search and memory_get."""
    _lifecycle(gw)
    sid = "3f2a9c1e-7b4d-4e8a-9c2f-1a2b3c4d5e6f"
    sessions = state / "agents/main/sessions"
    names = {
        f"{sid}-topic-7.jsonl": "THREAD-7001",
        f"2026-11-20T10-00-00-000Z_{sid}.jsonl": "FORK-7002",
        f"{sid}-topic-9.jsonl.reset.2026-11-21T10-00-00.000Z": "RESET-7003",
        "other-topic-7.jsonl": "OTHER-7004",  # another session's thread: kept
    }
    for name, code in names.items():
        (sessions / name).write_text(message("user", f"The code is {code}.") + "\n")
    with AgentIndex(_cfg(tmp_path, state)) as idx:
        idx.sync()
        assert all(_found(idx, code) for code in names.values())
        _forget(gw, sid)
        idx.sync()
        for name, code in names.items():
            if code == "OTHER-7004":
                assert _found(idx, code)
                continue
            assert _found(idx, code) == [], name
            with pytest.raises(NotFound):
                idx.get(f"sessions/{name}", start=1, lines=1)


def test_an_archive_read_in_part_is_named_in_status_while_it_is_indexed(
    tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A deleted session's archive that is not zstd, or expands past the bound, is
    read as far as it goes; status names it (skipped: what was left unread) on every
    sync after, not only the daemon's log on the one that read it, until it is gone."""
    monkeypatch.setattr(archives, "MAX_ARCHIVE_BYTES", 1024 * 1024)
    sessions = state / "agents/main/sessions"
    first = message("user", "Before the flood: MARKER-9191.")
    flood = (first + "\n" + message("user", "x" * 100) + "\n" * 1) * 20_000
    bomb = sessions / "bomb.jsonl.deleted.2026-11-27T08-00-00.000Z.zst"
    bomb.write_bytes(zstandard.ZstdCompressor().compress(flood.encode()))
    plain = sessions / "plain.jsonl.deleted.2026-11-27T08-00-00.000Z.zst"
    plain.write_text(message("user", "Not compressed at all: PLAIN-9292.") + "\n")
    with AgentIndex(_cfg(tmp_path, state)) as idx:
        idx.sync()
        for _ in range(2):  # the sync that read them, and one after
            skipped = {s["path"]: s["reason"] for s in idx.status()["skipped"]}
            assert "read in part" in skipped[f"sessions/{bomb.name}"], skipped
            assert f"sessions/{plain.name}" in skipped, skipped
            idx.sync()
        assert _found(idx, "MARKER-9191")
        bomb.unlink()
        idx.sync()
        skipped = {s["path"] for s in idx.status()["skipped"]}
        assert f"sessions/{bomb.name}" not in skipped and f"sessions/{plain.name}" in skipped


def test_a_forgotten_session_stays_out_when_a_backup_of_the_database_is_restored(
    tmp_path: Path, state: Path, gw: AgentDbFixture
) -> None:
    """The database replaced by a backup from before the forget (its tombstone gone):
    the session came back into search while memory_get still treated it as
    forgotten. The index keeps every tombstone it read, and both honour them."""
    _lifecycle(gw)
    gw.session("gone", "agent:main:telegram:direct:5")
    gw.append("gone", message("user", "My quokka's name is QUOKKA-6161."))
    _point(gw, "agent:main:telegram:direct:5", "gone")
    with AgentIndex(_cfg(tmp_path, state)) as idx:
        idx.sync()
        assert _found(idx, "QUOKKA-6161")
        _forget(gw, "gone")
        idx.sync()
        assert _found(idx, "QUOKKA-6161") == []
        with gw.db:  # the backup from before: no tombstone
            gw.db.execute("DELETE FROM memory_session_tombstones")
        for force in (False, True):
            idx.sync(force=force)
            assert _found(idx, "QUOKKA-6161") == []
        with pytest.raises(NotFound):  # as for any forgotten session
            idx.get("sessions/main/gone.jsonl")
