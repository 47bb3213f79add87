"""One writer per agent index, seen from outside: a second daemon for the same agent
is refused naming the first (it used to rebuild the shared index for its own
workspace, and each daemon then answered from the other's rows while both said
all was well), and an index that holds another workspace is a failure in
``status`` and ``doctor``, never "all is well"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import write
from daemon_util import DaemonProc, child_env, daemon_config, rpc, run_cli, search_paths

pytestmark = pytest.mark.slow


def _two_workspaces(tmp_path: Path) -> tuple[Path, Path]:
    one, two = tmp_path / "one", tmp_path / "two"
    write(one, "MEMORY.md", "# Memory\n- the heron nests by the pond\n")
    write(two, "MEMORY.md", "# Memory\n- the otter swims in the river\n")
    (tmp_path / "sessions").mkdir()
    return one, two


def test_a_second_daemon_for_the_same_agent_is_refused_naming_the_first(tmp_path: Path) -> None:
    one, two = _two_workspaces(tmp_path)
    first_cfg = daemon_config(tmp_path / "c1", one, tmp_path / "sessions")
    second_cfg = daemon_config(tmp_path / "c2", two, tmp_path / "sessions")
    first = DaemonProc(first_cfg, tmp_path / "one.sock", child_env()).start()
    try:
        assert first.proc is not None
        pid = first.proc.pid
        second = DaemonProc(second_cfg, tmp_path / "two.sock", child_env()).start(wait=False)
        assert second.proc is not None
        assert second.proc.wait(timeout=30) == 2
        out = second.stop()
        assert "being written by another memindex" in out, out
        assert f"pid {pid}" in out and str(tmp_path / "one.sock") in out and str(one) in out
        # the first goes on as if nothing happened
        assert search_paths(first.sock, "heron") == ["MEMORY.md"]
        assert search_paths(first.sock, "otter") == []
        st = rpc(first.sock, "status")
        assert not st["dirty"] and st["lastError"] is None and "mismatch" not in st, st
        assert st["workspace"] == str(one.resolve())
        # and the CLI, pointed at the other workspace, is refused too
        r = run_cli("--config", str(second_cfg), "index")
        assert r.returncode == 2 and "being written by another memindex" in r.stderr, r.stderr
    finally:
        first.stop()


def test_an_index_holding_another_workspace_fails_status_and_doctor(tmp_path: Path) -> None:
    one, two = _two_workspaces(tmp_path)
    first_cfg = daemon_config(tmp_path / "c1", one, tmp_path / "sessions")
    second_cfg = daemon_config(tmp_path / "c2", two, tmp_path / "sessions")
    assert run_cli("--config", str(first_cfg), "index").returncode == 0
    r = run_cli("--config", str(second_cfg), "status", "--json")
    assert r.returncode == 0, r.stderr
    st = json.loads(r.stdout)
    assert st["dirty"] and "holds workspace" in st["mismatch"] and str(one) in st["mismatch"]
    r = run_cli("--config", str(second_cfg), "status")
    assert "MISMATCH" in r.stdout and "memindex index" in r.stdout, r.stdout
    r = run_cli("--config", str(second_cfg), "doctor")
    assert r.returncode == 1
    (line,) = [ln for ln in r.stdout.splitlines() if ln.startswith("FAIL index")]
    assert "holds workspace" in line and "agentId" in line, line
    r = run_cli("--config", str(second_cfg), "search", "heron")
    assert r.returncode == 2 and "holds workspace" in r.stderr


def test_the_writer_lock_never_follows_a_planted_symlink(tmp_path: Path) -> None:
    """Reliability round 4: a lock-file symlink planted in the state folder made a
    root `memindex index` truncate the file it pointed at."""
    import os

    from indexer.errors import StoreError
    from indexer.store.writer_lock import FileLock

    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (state / ".main.writer.lock").symlink_to(victim)
    with pytest.raises(StoreError, match="is a symlink"):
        FileLock(state / "main.sqlite", "test")
    assert victim.read_text() == "precious\n"
    (state / ".main.writer.lock").unlink()
    os.chmod(state, 0o770)  # others may plant files here
    with pytest.raises(StoreError, match="chmod go-w"):
        FileLock(state / "main.sqlite", "test")
    os.chmod(state, 0o700)
    if os.geteuid() == 0:  # as root the folder's owner can be changed for real
        os.chown(state, 12345, 12345)
        with pytest.raises(StoreError, match="belongs to uid 12345"):
            FileLock(state / "main.sqlite", "test")
        os.chown(state, 0, 0)
    FileLock(state / "main.sqlite", "test").release()


def test_a_relative_xdg_state_home_is_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    """The XDG spec: a relative base directory is invalid and ignored."""
    from indexer.config import state_dir

    monkeypatch.setenv("XDG_STATE_HOME", "relative/state")
    assert state_dir().is_absolute()
    monkeypatch.setenv("XDG_STATE_HOME", "/abs/state")
    assert state_dir() == Path("/abs/state/memindex")


def test_a_flag_the_daemon_cannot_honour_is_an_error_naming_it(tmp_path: Path) -> None:
    """Reliability round 4: with a daemon serving the config's agent, `--workspace
    OTHER search` answered from the daemon's workspace ("No results."), `index`
    reported success for a missing workspace and `get` said "no such file"."""
    one, two = _two_workspaces(tmp_path)
    sock = tmp_path / "one.sock"  # the config's own socket: the CLI finds the daemon
    extra = f'[server]\nsocket = "{sock}"\n'
    conf = daemon_config(tmp_path / "c1", one, tmp_path / "sessions", extra=extra)
    env = child_env()
    d = DaemonProc(conf, sock, env).start()
    try:
        for args in (
            ("search", "otter"),
            ("index",),
            ("get", "MEMORY.md"),
        ):
            r = run_cli("--config", str(conf), "--workspace", str(two), *args, env=env)
            said = r.stdout + r.stderr
            assert r.returncode != 0, (args, said)
            assert f"serves agent main for workspace {one}" in said, (args, said)
        missing = tmp_path / "missing"
        r = run_cli("--config", str(conf), "--workspace", str(missing), "index", env=env)
        assert r.returncode != 0 and str(missing) in r.stdout + r.stderr
        # the daemon's own workspace still goes through it
        ok = run_cli("--config", str(conf), "search", "heron", env=env)
        assert ok.returncode == 0 and "MEMORY.md" in ok.stdout, ok.stdout + ok.stderr
    finally:
        d.stop()
