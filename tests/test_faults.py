"""Faults of the machine: disk full, a watched directory deleted and recreated,
clocks that jump. (Provider faults: test_openai_provider.py; the inotify limit:
test_agents_watcher.py; kills: test_crash.py.)"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import write
from daemon_util import DaemonProc, child_env, daemon_config, rpc, run_cli, wait_for

from indexer.config import Config
from indexer.engine import MemoryIndex
from indexer.store import Store


def _many_files(ws: Path, n: int, tag: str = "") -> None:
    for i in range(n):
        body = "\n".join(
            f"- {tag}note {j} of file {i} about topic{(i + j) % 53}" for j in range(40)
        )
        write(ws, f"memory/2025-{i:04d}.md", f"# File {i}\n\n{body}\n")


def _index_cli(cfg: Path, fsize: int | None) -> subprocess.CompletedProcess[str]:
    def limit() -> None:
        if fsize is not None:  # the disk "fills up" at fsize bytes per file
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

    return run_cli("--config", str(cfg), "index", timeout=120, preexec_fn=limit)


def test_disk_full_is_a_clear_error_and_corrupts_nothing(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    _many_files(ws, 150)
    index = tmp_path / "idx" / "main.sqlite"
    cfg = write(tmp_path, "c.toml", f'workspace = "{ws}"\nindexPath = "{index}"\n')
    first = _index_cli(cfg, None)
    assert first.returncode == 0, first.stderr
    _many_files(ws, 600, tag="grown ")  # much more text than the disk has room for
    full = _index_cli(cfg, 2 * 1024 * 1024)
    assert full.returncode != 0
    msg = full.stderr.lower()
    assert "traceback" not in msg and ("full" in msg or "too large" in msg or "space" in msg), msg
    with Store(index, readonly=True) as s:  # what was committed is intact
        assert s.consistency() == []
    again = _index_cli(cfg, None)  # room again: it converges
    assert again.returncode == 0, again.stderr
    clean = tmp_path / "clean.sqlite"
    with MemoryIndex(Config(workspace=ws, indexPath=clean)) as idx:
        idx.sync()
    with Store(index, readonly=True) as a, Store(clean, readonly=True) as b:
        q = "SELECT path, start_line, end_line, hash FROM chunks ORDER BY 1, 2"
        assert a.db.execute(q).fetchall() == b.db.execute(q).fetchall()
        assert a.consistency() == []


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[DaemonProc]:
    ws = tmp_path / "ws"
    write(ws, "MEMORY.md", "# Memory\n- first\n")
    write(ws, "memory/2026-01-01.md", "- heron sighting at the pond\n")
    (tmp_path / "sessions").mkdir()
    cfg = daemon_config(
        tmp_path, ws, tmp_path / "sessions", extra="[sync]\nwatchDebounceMs = 100\n"
    )
    d = DaemonProc(cfg, tmp_path / "run" / "mi.sock", child_env()).start()
    yield d
    d.stop()


def _search(d: DaemonProc, q: str) -> list[str]:
    res = rpc(d.sock, "memory_search", {"query": q, "minScore": 0})["results"]
    return [r["path"] for r in res]


def test_watched_directory_deleted_and_recreated(daemon: DaemonProc, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    assert _search(daemon, "heron") == ["memory/2026-01-01.md"]
    for f in (ws / "memory").iterdir():
        f.unlink()
    (ws / "memory").rmdir()
    wait_for(lambda: _search(daemon, "heron") == [])
    write(ws, "memory/2026-02-02.md", "- kingfisher at the new pond\n")
    wait_for(lambda: _search(daemon, "kingfisher") == ["memory/2026-02-02.md"], timeout=30)
    # ...and the new directory is watched: a later edit arrives too.
    time.sleep(0.3)
    write(ws, "memory/2026-02-03.md", "- egret on the bank\n")
    wait_for(lambda: _search(daemon, "egret") == ["memory/2026-02-03.md"], timeout=30)


def test_clock_jumps_and_restored_mtimes_are_not_missed(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    f = write(ws, "memory/notes.md", "- alpha one\n")
    cfg = Config(workspace=ws, indexPath=tmp_path / "i.sqlite")
    future = 4_102_444_800  # 2100-01-01: a clock that ran ahead
    os.utime(f, (future, future))
    with MemoryIndex(cfg) as idx:
        idx.sync()
        assert idx.search("alpha", min_score=0)["results"]
        # Same size, and the mtime put back to what it was (a restore, touch -r, a
        # clock jumping back): the change is still seen.
        f.write_text("- gamma one\n")
        os.utime(f, (future, future))
        idx.sync()
        assert idx.search("gamma", min_score=0)["results"]
        assert not idx.search("alpha", min_score=0)["results"]
        f.write_text("- delta one\n")
        os.utime(f, (0, 0))  # and to 1970
        idx.sync()
        assert idx.search("delta", min_score=0)["results"]
        assert idx.store.consistency() == []
