from __future__ import annotations

import errno
import json
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import write
from daemon_util import DaemonProc, child_env, rpc, wait_for
from watchdog.observers import Observer

from indexer.config import Config
from indexer.sources.watcher import Watcher

pytestmark = pytest.mark.slow


@pytest.fixture
def two_agents(tmp_path: Path) -> Iterator[DaemonProc]:
    for name, word in (("alice", "aardvark"), ("bob", "bumblebee")):
        write(tmp_path / name / "ws", "MEMORY.md", f"# {name}\n- {name} keeps a {word}.\n")
        write(
            tmp_path / name / "sessions",
            "s.jsonl",
            json.dumps({"type": "message", "role": "user", "content": f"private {word} chat"})
            + "\n",
        )
    cfg = write(
        tmp_path,
        "config.toml",
        "\n".join(
            [
                "[sync]",
                "watchDebounceMs = 100",
                "[[agents]]",
                'id = "alice"',
                f'workspace = "{tmp_path}/alice/ws"',
                f'sessionsDir = "{tmp_path}/alice/sessions"',
                "[[agents]]",
                'id = "bob"',
                f'workspace = "{tmp_path}/bob/ws"',
                f'sessionsDir = "{tmp_path}/bob/sessions"',
                "",
            ]
        ),
    )
    d = DaemonProc(cfg, tmp_path / "run" / "s.sock", child_env()).start()
    yield d
    d.stop()


def test_agents_are_isolated(two_agents: DaemonProc) -> None:
    sock = two_agents.sock
    wait_for(lambda: rpc(sock, "status", {"agent": "bob"})["sources"]["sessions"]["files"] == 1)
    assert rpc(sock, "memory_search", {"query": "aardvark", "agent": "alice"})["results"]
    assert (
        rpc(sock, "memory_search", {"query": "aardvark", "agent": "bob", "minScore": 0})["results"]
        == []
    )
    res = rpc(
        sock, "memory_search", {"query": "private aardvark chat", "agent": "bob", "minScore": 0}
    )["results"]
    assert res and all("aardvark" not in r["snippet"] for r in res)  # bob's own chat only
    assert rpc(sock, "memory_search", {"query": "bumblebee chat", "agent": "bob"})["results"]
    # bob cannot read alice's files through memory_get either.
    alice_ws = Path(rpc(sock, "status", {"agent": "alice"})["workspace"])
    for path in (str(alice_ws / "MEMORY.md"), "../../alice/ws/MEMORY.md"):
        with pytest.raises(RuntimeError):
            rpc(sock, "memory_get", {"path": path, "agent": "bob"})
    got = rpc(sock, "memory_get", {"path": "sessions/s.jsonl", "agent": "bob"})
    assert "bumblebee" in got["text"] and "aardvark" not in got["text"]
    with pytest.raises(RuntimeError, match="unknown agent"):
        rpc(sock, "memory_search", {"query": "x", "agent": "mallory"})
    assert rpc(sock, "status")["agents"] == ["alice", "bob"]


class _FailingInotify(Observer):  # type: ignore[misc,valid-type]
    """A real inotify observer whose kernel has run out of watches."""

    def schedule(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        raise OSError(errno.ENOSPC, "No space left on device")


def test_watcher_falls_back_to_polling_and_still_reports(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write(ws, "memory/a.md", "a")
    write(ws, "memory/node_modules/pkg/x.md", "never watched")
    seen: list[tuple[str, str, str]] = []
    got = threading.Event()

    def on_change(agent: str, kind: str, path: str) -> None:
        seen.append((agent, kind, path))
        got.set()

    w = Watcher(on_change, poll_interval=0.1, observer_factory=_FailingInotify)
    w.start([Config(workspace=ws, agentId="main")])
    try:
        st = w.status()
        assert st["backend"] == "polling" and "No space left" in st["reason"]
        write(ws, "memory/b.md", "new file")
        assert got.wait(10)
        wait_for(lambda: ("main", "memory", str(ws / "memory" / "b.md")) in seen, timeout=10)
    finally:
        w.stop()


def test_a_sessions_dir_created_later_is_synced_once_watched(tmp_path: Path) -> None:
    """Files written into a directory before its watch existed raise no event; the
    refresh that starts watching it asks for a sync instead."""
    ws, sessions = tmp_path / "ws", tmp_path / "sessions"
    write(ws, "MEMORY.md", "m")
    seen: list[tuple[str, str, str]] = []
    cfg = Config(workspace=ws, agentId="main")
    cfg = replace(cfg, sessions=replace(cfg.sessions, enabled=True, dir=str(sessions)))
    w = Watcher(lambda *a: seen.append(a))
    w.start([cfg])
    try:
        assert seen == []  # start-up: the daemon's own first sync covers what is there
        write(sessions, "s1.jsonl", "{}\n")  # the dir and a file, before any watch
        w.refresh()
        assert ("main", "sessions", "") in seen
        seen.clear()
        w.refresh()  # nothing new: nothing asked
        assert seen == []
    finally:
        w.stop()


def test_ignored_dirs_are_never_watched(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write(ws, "memory/a.md", "a")
    for i in range(30):
        write(ws, f"memory/.venv/lib/pkg{i}/x.md", "x")
        write(ws, f"memory/node_modules/m{i}/y.md", "y")
    write(ws, "memory/sub/deeper/c.md", "c")
    w = Watcher(lambda *a: None)
    w.start([Config(workspace=ws, agentId="main")])
    try:
        watched = set(w._watches)
        assert str(ws / "memory" / "sub" / "deeper") in watched
        assert not any(".venv" in d or "node_modules" in d for d in watched)
        # the root, memory/, sub/, sub/deeper/, and the folder above the root
        assert w.status()["backend"] == "inotify" and w.status()["watchedDirs"] == 5
    finally:
        w.stop()


def test_too_many_directories_means_polling_on_one_thread(tmp_path: Path) -> None:
    """watchdog's PollingObserver runs a thread per watch: with a watch per
    directory, 10,000 directories made thousands of threads, two busy cores and a
    daemon whose status did not answer in 2 minutes. Polling is one thread, and it
    still reports new, changed and deleted files and new directories."""
    ws = tmp_path / "ws"
    for i in range(300):
        write(ws, f"memory/d{i}/n.md", "x")
    seen: list[tuple[str, str, str]] = []
    before = threading.active_count()
    w = Watcher(lambda *a: seen.append(a), poll_interval=0.05, max_dirs=5)
    w.start([Config(workspace=ws, agentId="main")])
    try:
        assert w.status()["backend"] == "polling" and "limit 5" in w.status()["reason"]
        assert w.status()["watchedDirs"] == 303  # memory/, its 300 folders, the root, above it
        assert threading.active_count() - before <= 3  # poller, refresher, dispatcher
        changed = write(ws, "memory/d7/n.md", "changed, and longer")
        wait_for(lambda: ("main", "memory", str(changed)) in seen, timeout=10)
        (ws / "memory" / "d8" / "n.md").unlink()
        wait_for(lambda: ("main", "memory", str(ws / "memory/d8/n.md")) in seen, timeout=10)
        seen.clear()
        write(ws, "memory/fresh/deep/new.md", "a new folder")  # watched once seen,
        wait_for(lambda: ("main", "memory", "") in seen, timeout=10)  # then synced
        later = write(ws, "memory/fresh/deep/later.md", "and a file in it later")
        wait_for(lambda: ("main", "memory", str(later)) in seen, timeout=10)
    finally:
        w.stop()
