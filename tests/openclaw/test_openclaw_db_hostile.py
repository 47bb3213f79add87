"""OpenClaw's agent database and its archives read by the rules every source follows
(reliability round 4): no symlink followed, regular files only, bounded reads, a
deadline on each statement, one bad row or archive skipped and named while the rest
is indexed. Each case was an outside attack that stopped the writer, exhausted
memory or dropped every session of the database."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest
import zstandard
from test_openclaw_db import AgentDbFixture, _cfg, _found, gw, message, state

from indexer.engine import AgentIndex
from indexer.errors import PathRefused, TranscriptDbError
from indexer.sources.transcripts import agent_db as openclaw_db

pytestmark = pytest.mark.slow

__all__ = ["gw", "state"]  # fixtures used here

MiB = 1024 * 1024


def _in_time(fn, seconds: float = 60):  # type: ignore[no-untyped-def]
    """fn() in a thread; fail (never hang the suite) when it does not return."""
    out: dict[str, object] = {}

    def run() -> None:
        try:
            out["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            out["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"still running after {seconds} s"
    if "error" in out:
        raise out["error"]  # type: ignore[misc]
    return out.get("value")


def _cold_session(gw: AgentDbFixture, state: Path, sid: str, text: str) -> Path:
    gw.session(sid, f"agent:main:{sid}")
    gw.append(sid, message("user", text))
    cold = state / "agents/main/sessions/cold"
    before = set(cold.iterdir()) if cold.is_dir() else set()
    gw.go_cold(sid, cold)
    (new,) = set(cold.iterdir()) - before
    return new


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "outside"])
def test_a_cold_archive_that_is_no_regular_file_is_left_behind_at_once(
    tmp_path: Path, state: Path, gw: AgentDbFixture, kind: str
) -> None:
    archive = _cold_session(gw, state, "c1", "the OTTER-1 plan")
    archive.unlink()
    if kind == "fifo":
        os.mkfifo(archive)
    elif kind == "dev-zero":
        os.symlink("/dev/zero", archive)
    else:
        outside = tmp_path / "elsewhere.jsonl.zst"
        outside.write_bytes(b"not yours")
        os.symlink(outside, archive)
    gw.session("z9", "agent:main:other")
    gw.append("z9", message("user", "the HERON-2 nest"))
    with AgentIndex(_cfg(tmp_path, state)) as idx:
        _in_time(idx.sync)
        assert _found(idx, "HERON-2") == [("sessions/main/z9.jsonl", 2, 2)]
        why = idx.writer.left_behind["sessions/main/c1.jsonl"]
        assert why.startswith("cold archive ") and ("FIFO" in why or "symlink" in why), why
        with pytest.raises((TranscriptDbError, PathRefused)):
            _in_time(lambda: idx.get("sessions/main/c1.jsonl"))


def test_oversized_events_are_never_loaded_and_the_rest_is_indexed(
    tmp_path: Path, state: Path, gw: AgentDbFixture
) -> None:
    gw.session("s1", "agent:main:main")
    gw.append("s1", message("user", "before the bombs: MARKER-1"))
    bomb = zstandard.ZstdCompressor().compress(b"x" * (8 * MiB))  # 8 MiB from ~300 bytes
    with gw.db:
        for seq, declared in ((2, 256 * MiB), (3, None), (4, 8 * MiB)):
            gw.db.execute(
                "INSERT INTO transcript_events VALUES('s1', ?, NULL, 0, ?, ?, NULL)",
                (seq, bomb, declared),
            )
        big = message("user", "y" * (5 * MiB))  # stored as text, over the bound
        gw.db.execute(
            "INSERT INTO transcript_events VALUES('s1', 5, ?, 0, NULL, NULL, NULL)", (big,)
        )
    gw.append("s1", message("user", "after the bombs: MARKER-2"))
    with AgentIndex(_cfg(tmp_path, state)) as idx:
        rep = idx.sync()
        assert rep.sessions is not None and rep.sessions["malformed"] == 4
        assert _found(idx, "MARKER-1") and _found(idx, "MARKER-2")
        got = idx.get("sessions/main/s1.jsonl", start=1)
        assert got["totalLines"] == 7 and "MARKER-2" in got["text"]


def test_a_big_event_is_chunked_and_read_within_the_get_limit(
    tmp_path: Path, state: Path, gw: AgentDbFixture
) -> None:
    gw.session("s1", "agent:main:main")
    words = " ".join(f"w{i}" for i in range(400_000))  # ~2.8 MB, one message
    gw.append("s1", message("user", f"NEEDLE-77 {words} NEEDLE-88"), compress=True)
    with AgentIndex(_cfg(tmp_path, state)) as idx:
        idx.sync()
        hits = idx.search("NEEDLE-88", sources=["sessions"])["results"]
        assert hits and hits[0]["startLine"] == 2
        chunks = [c.text for c in idx.store.new_chunks(0) if c.path == "sessions/main/s1.jsonl"]
        assert len(chunks) > 100 and max(len(c) for c in chunks) < 10_000
        got = idx.get("sessions/main/s1.jsonl", start=2, lines=1)
        limit = idx.cfg.limits.maxGetBytes
        assert got["truncated"] and len(got["text"].encode()) <= limit


def test_one_bad_row_is_named_and_every_other_session_indexed(
    tmp_path: Path, state: Path, gw: AgentDbFixture
) -> None:
    gw.session("s1", "agent:main:main")
    gw.append("s1", message("user", "the first KOALA-1 note"))
    gw.append("s1", message("user", "the second KOALA-2 note"))
    with gw.db:  # a text seq in one event row
        gw.db.execute(
            "INSERT INTO transcript_events VALUES('s1', 'n/a', ?, 0, NULL, NULL, NULL)",
            (message("user", "never read"),),
        )
    _cold_session(gw, state, "c1", "the EMU-3 plan")
    with gw.db:  # an unreadable cold-archive row
        gw.db.execute("UPDATE session_transcript_cold_archives SET last_seq = 'n/a'")
    gw.session("z9", "agent:main:other")
    gw.append("z9", message("user", "the HERON-4 nest"))
    with AgentIndex(_cfg(tmp_path, state)) as idx:
        idx.sync()
        for word in ("KOALA-1", "KOALA-2", "HERON-4"):
            assert _found(idx, word), word
        skipped = {s["path"]: s["reason"] for s in idx.status()["skipped"]}
        assert "not an integer" in skipped["sessions/main/s1.jsonl"], skipped
        assert "last_seq 'n/a'" in skipped["sessions/main/c1.jsonl"], skipped


def test_a_statement_that_never_ends_is_abandoned(
    tmp_path: Path, state: Path, gw: AgentDbFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(openclaw_db, "DEADLINE_S", 1.0)
    gw.session("s1", "agent:main:main")
    with gw.db:
        gw.db.execute("ALTER TABLE transcript_events RENAME TO transcript_events_real")
        gw.db.execute(
            "CREATE VIEW transcript_events AS WITH RECURSIVE r(n) AS (SELECT 0 UNION ALL "
            "SELECT n + 1 FROM r) SELECT 's1' AS session_id, n AS seq, NULL AS event_json, "
            "0 AS created_at, NULL AS event_zstd, NULL AS event_utf8_bytes, "
            "NULL AS navigation_json FROM r WHERE n < 0"
        )
    with AgentIndex(_cfg(tmp_path, state)) as idx:
        t0 = time.monotonic()
        with pytest.raises(TranscriptDbError, match="abandoned"):
            _in_time(idx.sync, 30)
        assert time.monotonic() - t0 < 20


@pytest.mark.parametrize("kind", ["fifo", "gone"])
def test_a_database_replaced_or_gone_is_an_error_and_keeps_what_it_gave(
    tmp_path: Path, state: Path, gw: AgentDbFixture, kind: str
) -> None:
    gw.session("s1", "agent:main:main")
    gw.append("s1", message("user", "the LYNX-5 trail"))
    with AgentIndex(_cfg(tmp_path, state)) as idx:
        idx.sync()
        assert _found(idx, "LYNX-5")
        gw.db.close()
        for suffix in ("", "-wal", "-shm"):
            Path(f"{gw.path}{suffix}").unlink(missing_ok=True)
        if kind == "fifo":
            os.mkfifo(gw.path)
        with pytest.raises(TranscriptDbError) as info:
            _in_time(idx.sync)
        assert ("gone" if kind == "gone" else "not a regular file") in info.value.message
        assert _found(idx, "LYNX-5")  # nothing lost


def test_a_jsonl_message_between_1_and_4_mib_is_kept(tmp_path: Path, state: Path) -> None:
    sessions = state / "agents/main/sessions"
    big = message("user", "OCELOT-6 " + "z " * 600_000)  # ~1.2 MB line
    (sessions / "t1.jsonl").write_text(big + "\n" + message("user", "and JAGUAR-7") + "\n")
    with AgentIndex(_cfg(tmp_path, state)) as idx:
        rep = idx.sync()
        assert rep.sessions is not None and rep.sessions["malformed"] == 0
        assert _found(idx, "OCELOT-6") and _found(idx, "JAGUAR-7")
        got = idx.get("sessions/t1.jsonl", start=1, lines=1)  # over maxGetBytes: cut, not empty
        assert got["text"].startswith("User: OCELOT-6 z z") and got["truncated"]
        assert len(got["text"].encode()) <= idx.cfg.limits.maxGetBytes


def test_the_batch_of_events_stops_at_its_byte_budget(state: Path, gw: AgentDbFixture) -> None:
    gw.session("s1", "agent:main:main")
    gw.append("s1", *(message("user", "m" * 300_000) for _ in range(10)))
    with openclaw_db.AgentDb(gw.path) as db:
        got = db.events("s1", 0, 256, max_bytes=1 * MiB)
        assert 3 <= len(got) <= 5
        assert json.loads(got[1][1] or "{}")["type"] == "message"


def test_session_keys_are_redacted_and_unopenable_ids_skipped(
    tmp_path: Path, state: Path, gw: AgentDbFixture
) -> None:
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    gw.session("s1", f"agent:main:telegram:direct:{token}:password=hunter2")
    gw.append("s1", message("user", "the IBIS-1 colony"))
    for bad in ("../../../etc/passwd", "a\x00b", "new\nline", "x" * 1500):
        gw.session(bad, "agent:main:main")
        gw.append(bad, message("user", "the IBIS-2 colony"))
    with AgentIndex(_cfg(tmp_path, state)) as idx:
        idx.sync()
        hits = idx.search("IBIS-1", sources=["sessions"])["results"]
        assert hits and token not in hits[0]["heading"] and "hunter2" not in hits[0]["heading"]
        assert "[REDACTED]" in hits[0]["heading"]
        assert _found(idx, "IBIS-2") == []
        skipped = [s for s in idx.status()["skipped"] if "memory_get could not open" in s["reason"]]
        assert len(skipped) == 4, skipped


def test_a_window_whose_events_are_all_gone_holds_nothing(
    tmp_path: Path, state: Path, gw: AgentDbFixture
) -> None:
    """Every event row of an indexed window deleted, no archive written: the window
    holds nothing, so nothing of it stays in the index; once each sync failed with
    "internal error: AssertionError" for as long as it lasted."""
    gw.session("s1", "agent:main:main")
    gw.append("s1", message("user", "The shed key is under the FERN-6262 pot."))
    gw.session("s2", "agent:main:telegram:direct:5")
    gw.append("s2", message("user", "Keep this: MOSS-7373."))
    with AgentIndex(_cfg(tmp_path, state)) as idx:
        idx.sync()
        assert _found(idx, "FERN-6262")
        with gw.db:
            gw.db.execute("DELETE FROM transcript_events WHERE session_id='s1'")
        rep = idx.sync()
        assert rep.sessions is not None and rep.sessions["errors"] == [], rep.sessions
        assert _found(idx, "FERN-6262") == [] and _found(idx, "MOSS-7373")
        rep = idx.sync()  # and stays so, without an error
        assert rep.sessions is not None and rep.sessions["errors"] == []
