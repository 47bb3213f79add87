"""Transcripts in OpenClaw's agent database (2026.9 and later), read by memindex.

The database here is made by the test with the tables and columns memindex reads, as
OpenClaw 2026.9.6 lays them out (schema version 23): events as plain JSON or as a
zstd frame, a rewrite generation, cold archives. The real gateway writes one in
tests/openclaw/test_openclaw_parity.py."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from pathlib import Path

import apsw
import pytest
import zstandard
from conftest import write

from indexer.config import Config, SessionsConfig
from indexer.engine import AgentIndex
from indexer.errors import TranscriptDbError

DDL = """
PRAGMA journal_mode=WAL;
CREATE TABLE session_windows (session_id TEXT PRIMARY KEY, session_key TEXT NOT NULL,
  created_at INTEGER NOT NULL DEFAULT 0, updated_at INTEGER NOT NULL DEFAULT 0);
CREATE TABLE transcript_events (session_id TEXT NOT NULL, seq INTEGER NOT NULL, event_json TEXT,
  created_at INTEGER NOT NULL, event_zstd BLOB, event_utf8_bytes INTEGER, navigation_json TEXT,
  PRIMARY KEY (session_id, seq));
CREATE TABLE transcript_rewrite_watermarks (session_id TEXT PRIMARY KEY, generation TEXT NOT NULL,
  updated_at INTEGER NOT NULL);
CREATE TABLE session_transcript_cold_archives (session_id TEXT PRIMARY KEY,
  generation TEXT NOT NULL, archive_name TEXT NOT NULL UNIQUE, archive_sha256 TEXT NOT NULL,
  event_count INTEGER NOT NULL,
  raw_bytes INTEGER NOT NULL, archive_bytes INTEGER NOT NULL, last_seq INTEGER NOT NULL,
  archived_at INTEGER NOT NULL, storage TEXT NOT NULL, archive_blob BLOB);
PRAGMA user_version=23;
"""


def message(role: str, text: str) -> str:
    return json.dumps(
        {
            "type": "message",
            "id": f"m{time.time_ns()}",
            "message": {"role": role, "content": [{"type": "text", "text": text}]},
        }  # fmt: skip
    )


class AgentDbFixture:
    """An agent database the way the gateway keeps it: short write transactions."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.db = apsw.Connection(str(path))
        self.db.set_busy_timeout(0)  # the gateway must never wait on memindex
        list(self.db.execute(DDL))  # every statement (apsw runs them as they are read)

    def session(self, sid: str, key: str, generation: str = "g1") -> None:
        with self.db:
            self.db.execute(
                "INSERT INTO session_windows(session_id, session_key) VALUES(?, ?)", (sid, key)
            )
            header = json.dumps({"type": "session", "version": 4, "id": sid})
            self.db.execute(
                "INSERT INTO transcript_events VALUES(?, 0, ?, 0, NULL, NULL, NULL)", (sid, header)
            )
            self.db.execute(
                "INSERT INTO transcript_rewrite_watermarks VALUES(?, ?, 0)", (sid, generation)
            )

    def append(self, sid: str, *events: str, compress: bool = False) -> None:
        with self.db:
            row = self.db.execute(
                "SELECT coalesce(max(seq), -1) FROM transcript_events WHERE session_id=?", (sid,)
            ).fetchone()
            seq = int(row[0]) + 1
            for ev in events:
                if compress:
                    raw = ev.encode()
                    blob = zstandard.ZstdCompressor(level=1, write_checksum=True).compress(raw)
                    self.db.execute(
                        "INSERT INTO transcript_events VALUES(?, ?, NULL, 0, ?, ?, '{}')",
                        (sid, seq, blob, len(raw)),
                    )
                else:
                    self.db.execute(
                        "INSERT INTO transcript_events VALUES(?, ?, ?, 0, NULL, NULL, NULL)",
                        (sid, seq, ev),
                    )
                seq += 1

    def rewrite(self, sid: str, generation: str, *events: str) -> None:
        """A full replacement (``sessions compact --max-lines``): rows deleted, seq from 0."""
        with self.db:
            self.db.execute("DELETE FROM transcript_events WHERE session_id=?", (sid,))
            self.db.execute(
                "UPDATE transcript_rewrite_watermarks SET generation=? WHERE session_id=?",
                (generation, sid),
            )
        self.append(sid, json.dumps({"type": "session", "id": sid}), *events)

    def go_cold(self, sid: str, archive_dir: Path) -> None:
        """Move a session's rows into a cold archive file, as cold storage does."""
        rows = self.db.execute(
            "SELECT seq, coalesce(event_json, '') , event_zstd, created_at FROM transcript_events "
            "WHERE session_id=? ORDER BY seq",
            (sid,),
        ).fetchall()
        gen = self.db.execute(
            "SELECT generation FROM transcript_rewrite_watermarks WHERE session_id=?", (sid,)
        ).fetchone()[0]
        lines = [json.dumps({"kind": "header", "version": 1, "sessionId": sid, "generation": gen})]
        for seq, text, blob, created in rows:
            if blob is not None:
                text = zstandard.ZstdDecompressor().decompress(blob).decode()
            lines.append(json.dumps({"kind": "event", "row": {"seq": seq, "event_json": text,
                                                              "created_at": created}}))  # fmt: skip
        data = zstandard.ZstdCompressor().compress(("\n".join(lines) + "\n").encode())
        sha = hashlib.sha256(data).hexdigest()
        archive_dir.mkdir(parents=True, exist_ok=True)
        (archive_dir / f"{sha}.jsonl.zst").write_bytes(data)
        with self.db:
            self.db.execute(
                "INSERT INTO session_transcript_cold_archives VALUES(?, ?, ?, ?, ?, 0, ?, ?, 0, "
                "'file', NULL)",
                (sid, gen, f"{sha}.jsonl.zst", sha, len(rows), len(data), rows[-1][0]),
            )
            self.db.execute("DELETE FROM transcript_events WHERE session_id=?", (sid,))

    def delete(self, sid: str) -> None:
        with self.db:
            self.db.execute("DELETE FROM transcript_events WHERE session_id=?", (sid,))
            self.db.execute("DELETE FROM transcript_rewrite_watermarks WHERE session_id=?", (sid,))
            self.db.execute("DELETE FROM session_windows WHERE session_id=?", (sid,))


@pytest.fixture
def state(tmp_path: Path) -> Path:
    """An OpenClaw state folder: agents/main/{sessions,agent/openclaw-agent.sqlite}."""
    (tmp_path / "state" / "agents" / "main" / "sessions").mkdir(parents=True)
    return tmp_path / "state"


@pytest.fixture
def gw(state: Path) -> AgentDbFixture:
    return AgentDbFixture(state / "agents" / "main" / "agent" / "openclaw-agent.sqlite")


def _cfg(tmp_path: Path, state: Path) -> Config:
    ws = tmp_path / "ws"
    write(ws, "MEMORY.md", "# Memory\n- nothing about vaults\n")
    sessions = SessionsConfig(dir=str(state / "agents" / "main" / "sessions"))
    return Config(workspace=ws, agentId="main", indexPath=tmp_path / "i.sqlite", sessions=sessions)


def _found(idx: AgentIndex, query: str) -> list[tuple[str, int, int]]:
    res = idx.search(query, sources=["sessions"], min_score=0)["results"]
    return [(r["path"], r["startLine"], r["endLine"]) for r in res]


def test_messages_in_the_database_are_indexed_and_cited_by_seq(
    tmp_path: Path, state: Path, gw: AgentDbFixture
) -> None:
    gw.session("s1", "agent:main:main")
    gw.append(
        "s1",
        json.dumps({"type": "model_change", "provider": "mock", "modelId": "m"}),
        message("user", "The vault code word is QUOKKA-7781."),
        message("assistant", "Noted: QUOKKA-7781."),
        message("user", "A long message about the garden " + "tomatoes and beans " * 200),
    )
    gw.append("s1", message("user", "compressed: the ferry leaves at PIER-42 " * 60), compress=True)
    cfg = _cfg(tmp_path, state)
    with AgentIndex(cfg) as idx:
        rep = idx.sync()
        assert rep.sessions is not None and rep.sessions["dbSessions"] == 1
        assert _found(idx, "QUOKKA-7781") == [("sessions/main/s1.jsonl", 3, 4)]
        hit = idx.search("QUOKKA-7781", sources=["sessions"])["results"][0]
        assert hit["heading"] == "agent:main:main" and hit["citation"].startswith(
            "sessions/main/s1"
        )
        assert _found(idx, "PIER-42")[0][1] == 6  # the zstd event, seq 5
        got = idx.get("sessions/main/s1.jsonl", start=3, lines=2)
        assert (
            got["text"]
            == "User: The vault code word is QUOKKA-7781.\nAssistant: Noted: QUOKKA-7781."
        )
        assert got["totalLines"] == 6
        raw = idx.get("sessions/main/s1.jsonl", start=2, lines=1)
        assert raw["text"] == ""  # a model change is no message
        assert idx.status()["sources"]["sessions"]["files"] == 1
        # growth: only the new events are read
        gw.append("s1", message("user", "And the backup word is WOMBAT-2290."))
        rep = idx.sync()
        assert rep.sessions is not None and rep.sessions["messages"] == 1
        assert _found(idx, "WOMBAT-2290") == [("sessions/main/s1.jsonl", 7, 7)]
        assert idx.sync().sessions["messages"] == 0  # type: ignore[index]


def test_a_session_of_one_event_is_read_once(
    tmp_path: Path, state: Path, gw: AgentDbFixture
) -> None:
    """A new session holds one event, seq 0; it was taken for a rewritten session at
    every sync (seq 0 read as "no event") and read again from the start."""
    gw.session("s1", "agent:main:main")
    with AgentIndex(_cfg(tmp_path, state)) as idx:
        first = idx.sync().sessions
        again = idx.sync().sessions
    assert first is not None and first["dbSessions"] == 1
    assert again is not None and again["restarted"] == 0


def test_rewritten_deleted_and_cold_sessions(
    tmp_path: Path, state: Path, gw: AgentDbFixture
) -> None:
    gw.session("s1", "agent:main:main")
    gw.append("s1", message("user", "old text about the OTTER-1 plan"))
    gw.session("s2", "agent:main:other")
    gw.append("s2", message("user", "the HERON-2 nest is by the reeds"))
    cfg = _cfg(tmp_path, state)
    with AgentIndex(cfg) as idx:
        idx.sync()
        assert _found(idx, "OTTER-1") and _found(idx, "HERON-2")
        gw.rewrite("s1", "g2", message("user", "compacted: only the BADGER-3 plan is left"))
        idx.sync()
        assert _found(idx, "OTTER-1") == []
        assert _found(idx, "BADGER-3") == [("sessions/main/s1.jsonl", 2, 2)]
        gw.delete("s2")
        idx.sync()
        assert _found(idx, "HERON-2") == []
        gw.go_cold("s1", state / "agents" / "main" / "sessions" / "cold")
        idx.sync()  # its rows left the database: what was indexed stays
        assert _found(idx, "BADGER-3") == [("sessions/main/s1.jsonl", 2, 2)]
        assert "BADGER-3" in idx.get("sessions/main/s1.jsonl")["text"]
    with AgentIndex(cfg) as idx:
        idx.sync(force=True)  # a new index reads the cold session from its archive
        assert _found(idx, "BADGER-3") == [("sessions/main/s1.jsonl", 2, 2)]


def test_a_session_deleted_and_added_again_under_its_id_is_read_again(
    tmp_path: Path, state: Path, gw: AgentDbFixture
) -> None:
    """The same id and generation, as many rows as were read before (a session
    deleted and added again between two syncs, a database restored from a copy):
    the rows below the old cursor were never read, and the deleted text stayed
    searchable, cited at lines that now hold other messages."""
    gw.session("s1", "agent:main:main")
    gw.append("s1", message("user", "old: the tent colour is ORANGE-4001"))
    cfg = _cfg(tmp_path, state)
    with AgentIndex(cfg) as idx:
        idx.sync()
        assert _found(idx, "ORANGE-4001") == [("sessions/main/s1.jsonl", 2, 2)]
        gw.delete("s1")
        gw.session("s1", "agent:main:main")
        gw.append(
            "s1",
            message("user", "new: the boat is YACHT-5001"),
            message("user", "new: the car is SEDAN-5002"),
        )
        idx.sync()
        assert _found(idx, "ORANGE-4001") == []
        assert _found(idx, "YACHT-5001") and _found(idx, "SEDAN-5002")
        gw.append("s1", message("user", "then: the bike is GRAVEL-5003"))
        idx.sync()  # and then it grows as any session does
        assert _found(idx, "GRAVEL-5003") and _found(idx, "YACHT-5001")


def test_a_cold_session_whose_archive_is_gone_leaves_the_others_indexed(
    tmp_path: Path, state: Path, gw: AgentDbFixture
) -> None:
    """A session whose cold archive file is gone cannot be read: it is left behind
    with that reason (the writer's ``left_behind``; the daemon's status shows it) and
    the sessions after it are indexed. It used to end the whole database pass."""
    cold = state / "agents" / "main" / "sessions" / "cold"
    gw.session("a1", "agent:main:main")
    gw.append("a1", message("user", "the OTTER-1 plan"))
    gw.go_cold("a1", cold)
    for archive in cold.iterdir():
        archive.unlink()
    gw.session("z9", "agent:main:other")
    gw.append("z9", message("user", "the HERON-2 nest is by the reeds"))
    with AgentIndex(_cfg(tmp_path, state)) as idx:
        report = idx.sync()
        assert report.sessions is not None
        assert _found(idx, "HERON-2") == [("sessions/main/z9.jsonl", 2, 2)]
        assert list(idx.writer.left_behind) == ["sessions/main/a1.jsonl"]
        why = idx.writer.left_behind["sessions/main/a1.jsonl"]
        assert why.startswith("cold archive ") and why.endswith(": no such file")


def test_an_unknown_schema_is_an_error_not_an_empty_source(
    tmp_path: Path, state: Path, gw: AgentDbFixture
) -> None:
    gw.db.execute("ALTER TABLE transcript_events RENAME COLUMN event_zstd TO payload")
    gw.db.execute("PRAGMA user_version=24")
    cfg = _cfg(tmp_path, state)
    with (
        AgentIndex(cfg) as idx,
        pytest.raises(TranscriptDbError, match="schema version 24") as exc,
    ):
        idx.sync()
    assert "transcript_events.event_zstd" in str(exc.value)


def test_reading_never_blocks_the_gateway(tmp_path: Path, state: Path, gw: AgentDbFixture) -> None:
    """The gateway writes with no busy wait at all here: a read transaction of
    memindex's that held a lock it needs would fail its write at once."""
    gw.session("s1", "agent:main:main")
    failures: list[str] = []
    stop = threading.Event()

    def gateway() -> None:
        n = 0
        while not stop.is_set():
            try:
                gw.append("s1", message("user", f"note {n} about the weather"))
            except apsw.BusyError as exc:
                failures.append(str(exc))
            n += 1

    t = threading.Thread(target=gateway)
    t.start()
    try:
        cfg = _cfg(tmp_path, state)
        with AgentIndex(cfg) as idx:
            for _ in range(30):
                idx.sync()
    finally:
        stop.set()
        t.join()
    assert failures == []
    with AgentIndex(cfg) as idx:
        idx.sync()
        last = gw.db.execute("SELECT max(seq) FROM transcript_events").fetchone()[0]
        assert idx.status()["sources"]["sessions"]["chunks"] > 0
        got = idx.get("sessions/main/s1.jsonl", start=last + 1, lines=1)
        assert got["text"].startswith("User: note ")


def test_a_jsonl_transcript_and_the_database_side_by_side(
    tmp_path: Path, state: Path, gw: AgentDbFixture
) -> None:
    """Rotated JSONL files stay in sessions/ after the import: both are indexed, and
    OpenClaw's zstd archives of deleted sessions are not read as JSONL."""
    sessions = state / "agents" / "main" / "sessions"
    (sessions / "old.jsonl.reset.2026-01-01T00-00-00.000Z").write_text(
        json.dumps({"type": "message", "role": "user", "content": "legacy KESTREL-5"}) + "\n"
    )
    (sessions / "s9.jsonl.deleted.2026-01-02T00-00-00.000Z.abc.zst").write_bytes(
        zstandard.ZstdCompressor().compress(b"{}\n")
    )
    gw.session("s1", "agent:main:main")
    gw.append("s1", message("user", "database FALCON-6"))
    with AgentIndex(_cfg(tmp_path, state)) as idx:
        rep = idx.sync()
        assert rep.sessions is not None and rep.sessions["malformed"] == 0
        assert _found(idx, "KESTREL-5")[0][0] == "sessions/old.jsonl.reset.2026-01-01T00-00-00.000Z"
        assert _found(idx, "FALCON-6")[0][0] == "sessions/main/s1.jsonl"
        idx.sync()  # the JSONL sync leaves the database's transcripts alone, and the reverse
        assert _found(idx, "KESTREL-5") and _found(idx, "FALCON-6")


@pytest.mark.slow
def test_the_daemon_indexes_what_the_gateway_writes_within_seconds(
    tmp_path: Path, state: Path, gw: AgentDbFixture
) -> None:
    """The watcher sees the database and its WAL change; the delta is indexed at the
    next sync, with no size threshold or idle wait (a turn is searchable in the
    next one)."""
    from daemon_util import DaemonProc, child_env, daemon_config, rpc, search_paths, wait_for

    gw.session("s1", "agent:main:main")
    ws = tmp_path / "ws"
    write(ws, "MEMORY.md", "# Memory\n- nothing\n")
    cfg = daemon_config(
        tmp_path / "conf",
        ws,
        state / "agents" / "main" / "sessions",
        extra="[sync]\nwatchDebounceMs = 200\n",
    )
    d = DaemonProc(cfg, tmp_path / "d.sock", child_env()).start()
    try:
        gw.append("s1", message("user", "remember the gate code LYNX-3301"))
        t0 = time.monotonic()
        wait_for(lambda: search_paths(d.sock, "LYNX-3301") == ["sessions/main/s1.jsonl"], 15)
        print(f"searchable {time.monotonic() - t0:.3f} s after the write")
        gw.append("s1", message("assistant", "and the alarm code ORCA-7"), compress=True)
        wait_for(lambda: search_paths(d.sock, "ORCA-7") == ["sessions/main/s1.jsonl"], 15)
        # Its own reads of the database are not the gateway writing: it stays idle.
        # (They end in "closed" and, as root, "attrib" events on the WAL; each sync
        # used to schedule the next, for seconds or for good.)
        d.wait_idle(timeout=15)
        busy = 0
        for _ in range(15):
            busy += bool(rpc(d.sock, "status")["dirty"])
            time.sleep(0.1)
        assert busy == 0
    finally:
        d.stop()


def test_a_database_transcript_hit_names_its_session_kind(
    tmp_path: Path, state: Path, gw: AgentDbFixture
) -> None:
    """memory-core's session kinds: a session spawned as a subagent's, else
    interactive; an owner's message (OpenClaw's senderIsOwner) is `owner`."""
    owner = json.dumps(
        {
            "type": "message",
            "message": {
                "role": "user",
                "content": [{"type": "text", "text": "Owner says GANNET-1212."}],
                "__openclaw": {"senderIsOwner": True},
            },
        }
    )
    gw.session("s1", "agent:main:telegram:direct:7")
    gw.append("s1", owner)
    gw.session("s2", "agent:main:subagent:a1b2")
    gw.append("s2", message("user", "Subagent notes SKUA-3434."))
    with AgentIndex(_cfg(tmp_path, state)) as idx:
        idx.sync()

        def prov(q: str) -> dict[str, object]:
            res = idx.search(q, sources=["sessions"], min_score=0)["results"]
            return dict(res[0]["provenance"])

        assert prov("GANNET-1212") == {
            "originClass": "owner",
            "sessionKind": "interactive",
            "observedAt": prov("GANNET-1212")["observedAt"],
        }
        assert prov("SKUA-3434")["sessionKind"] == "subagent"
        assert prov("SKUA-3434")["originClass"] == "untrusted"
