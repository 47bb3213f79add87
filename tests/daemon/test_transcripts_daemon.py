"""How the daemon keeps transcripts current: a new line is searchable at once and
committed once quiet as the daemon saw it (a file's clock in the future changes nothing), a
large transcript is indexed in slices that leave room for memory files, status and
shutdown, and ``memory_get`` shows a transcript's messages as search does."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import write
from daemon_util import DaemonProc, child_env, daemon_config, rpc, search_paths, wait_for

pytestmark = pytest.mark.slow


def _line(text: str, role: str = "user") -> str:
    return json.dumps({"type": "message", "message": {"role": role, "content": text}}) + "\n"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    write(ws, "MEMORY.md", "# Memory\n- the heron nests by the pond\n")
    (tmp_path / "sessions").mkdir()
    return ws


def _daemon(tmp_path: Path, ws: Path, sessions_keys: str) -> DaemonProc:
    cfg = daemon_config(
        tmp_path / "conf",
        ws,
        tmp_path / "sessions",
        sessions_keys=sessions_keys,
        extra="[sync]\nwatchDebounceMs = 100\n",
    )
    return DaemonProc(cfg, tmp_path / "d.sock", child_env())


@pytest.fixture
def quiet_daemon(tmp_path: Path, ws: Path) -> Iterator[DaemonProc]:
    """Deltas wait for 50 messages, or for 1.5 s of quiet."""
    d = _daemon(tmp_path, ws, "deltaMessages = 50\nidleFlushMs = 1500\n").start()
    try:
        yield d
    finally:
        d.stop()


def test_a_transcript_with_a_future_mtime_is_indexed_once_quiet(
    tmp_path: Path, quiet_daemon: DaemonProc
) -> None:
    """A clock stepped back, or a file from a host whose clock runs ahead: its
    mtime lies in the future, and "now - mtime >= idleFlushMs" never came true, so
    the delta was never indexed while status said nothing was wrong."""
    f = tmp_path / "sessions" / "ahead.jsonl"
    f.write_text(_line("the vault code is QUOKKA-7781") + _line("noted", "assistant"))
    ahead = time.time() + 70 * 365 * 86400  # 2096
    os.utime(f, (ahead, ahead))
    hits = wait_for(
        lambda: search_paths(quiet_daemon.sock, "QUOKKA-7781", sources=["sessions"]), timeout=30
    )
    assert hits == ["sessions/ahead.jsonl"]
    wait_for(lambda: not rpc(quiet_daemon.sock, "status")["dirty"], timeout=30)
    with f.open("a") as fh:  # and a later delta to the same file, still ahead
        fh.write(_line("the second code is WOMBAT-2290"))
    os.utime(f, (ahead, ahead))
    wait_for(lambda: search_paths(quiet_daemon.sock, "WOMBAT-2290"), timeout=30)


def test_a_message_is_searchable_at_once_and_committed_later(tmp_path: Path, ws: Path) -> None:
    """A line said a moment ago is searchable within the watcher's debounce (it
    waited for ``idleFlushMs``, 60 s by default): the delta is indexed as the
    transcript's tail, and committed (cut into its chunks for good) when it passes
    the thresholds, has been quiet that long, or ``memindex index`` asks; ``status``
    shows the tail meanwhile."""
    d = _daemon(tmp_path, ws, "deltaMessages = 50\nidleFlushMs = 60000\n").start()
    try:
        f = tmp_path / "sessions" / "busy.jsonl"
        for i in range(4):
            with f.open("a") as fh:
                fh.write(_line(f"part {i}: the kestrel code is KESTREL-{i}"))
            # well within the 60 s a delta used to wait
            wait_for(lambda i=i: search_paths(d.sock, f"KESTREL-{i}"), timeout=15)
            st = rpc(d.sock, "status")
            assert st["transcriptTails"] == 1 and st["dirty"], st
        assert rpc(d.sock, "reindex")["sessions"]["chunksWritten"] == 1
        st = wait_for(lambda: (s := rpc(d.sock, "status"))["dirty"] is False and s, timeout=15)
        assert "transcriptTails" not in st, st
        assert st["sources"]["sessions"] == {"files": 1, "chunks": 1}  # the tails replaced
        assert all(search_paths(d.sock, f"KESTREL-{i}") for i in range(4))
    finally:
        d.stop()


def test_a_large_transcript_is_indexed_in_slices(tmp_path: Path, ws: Path) -> None:
    """A 24 MiB transcript used to hold the one writer until it was done: a memory
    edit waited behind it, status showed no progress for tens of seconds and
    SIGTERM waited for the end. Now it is read a slice at a time."""
    f = tmp_path / "sessions" / "huge.jsonl"
    filler = "words about the garden and the weather " * 20
    with f.open("w") as fh:
        fh.write(_line("the opening message names the OSPREY-1 project"))
        n = 0
        while fh.tell() < 24 * 1024 * 1024:
            fh.write(_line(f"{filler} {n}", "assistant" if n % 2 else "user"))
            n += 1
        fh.write(_line("the closing message names the PETREL-9 project"))
    d = _daemon(tmp_path, ws, "deltaMessages = 50\nidleFlushMs = 1000\n").start(wait=False)
    try:
        wait_for(lambda: search_paths(d.sock, "OSPREY-1"), timeout=60)  # under way
        write(ws, "memory/2026-11-25.md", "- the ibis came back to the pond\n")
        wait_for(lambda: search_paths(d.sock, "ibis"), timeout=30)
        st = rpc(d.sock, "status")
        assert search_paths(d.sock, "PETREL-9") == [], "the transcript was done first"
        assert st["dirty"] and not st["stuck"]
        for _ in range(5):  # progress is beaten between slices, not only between files
            busy = rpc(d.sock, "status")["busy"]
            assert busy is None or busy["noProgressS"] < 10, busy
            time.sleep(0.3)
        t0 = time.monotonic()
        d.signal(signal.SIGTERM)
        assert d.proc is not None
        d.proc.wait(timeout=20)
        assert time.monotonic() - t0 < 10, "shutdown waited for the transcript"
    finally:
        d.stop()
    d = _daemon(tmp_path, ws, "deltaMessages = 50\nidleFlushMs = 1000\n").start(wait=False)
    try:  # a restart goes on from the committed slices to the end
        wait_for(lambda: search_paths(d.sock, "PETREL-9"), timeout=120)
        assert search_paths(d.sock, "OSPREY-1") == ["sessions/huge.jsonl"]
        d.wait_idle(timeout=60)
    finally:
        d.stop()
