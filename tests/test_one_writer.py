"""One writer per agent index, seen from outside: a second daemon for the same agent
is refused naming the first (it used to rebuild the shared index for its own
workspace, and each daemon then answered from the other's rows while both said
all was well), and an index that holds another workspace is a failure in
``status`` and ``doctor``, never "all is well"."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import write
from daemon_util import DaemonProc, child_env, daemon_config, rpc, run_cli, search_paths


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
