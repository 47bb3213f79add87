"""A command-line hybrid search that had to load the model starts a daemon for the
searches after it (issue #63): said on stderr, shown by status, stopped by
`serve --stop`, never with --no-daemon, and never beside a daemon already there."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from conftest import write
from daemon_util import child_env, rpc, run_cli, wait_for

pytestmark = pytest.mark.slow


def _config(tmp_path: Path, workspace: Path, model_path: Path) -> Path:
    sock = tmp_path / "s.sock"
    return write(
        tmp_path,
        "c.toml",
        f'workspace = "{workspace}"\nindexPath = "{tmp_path}/i.sqlite"\n'
        f'[provider.local]\nmodelPath = "{model_path}"\n[server]\nsocket = "{sock}"\n',
    )


def test_a_hybrid_search_starts_a_daemon_for_the_next_ones(
    tmp_path: Path, workspace: Path, model_path: Path
) -> None:
    conf = _config(tmp_path, workspace, model_path)
    sock = tmp_path / "s.sock"
    env = {k: v for k, v in child_env().items() if k != "MEMINDEX_NO_DAEMON"}
    assert run_cli("--config", str(conf), "index", env=env).returncode == 0
    none = run_cli("--config", str(conf), "search", "rye bread", "--no-daemon", env=env)
    assert none.returncode == 0 and "started a daemon" not in none.stderr
    assert not sock.exists()
    first = run_cli("--config", str(conf), "search", "rye bread", "--json", env=env)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["mode"] == "hybrid"  # answered by this process
    assert "started a daemon" in first.stderr and "serve --stop" in first.stderr
    try:
        wait_for(lambda: rpc(sock, "ping")["ok"], timeout=60)
        st = json.loads(run_cli("--config", str(conf), "status", "--json", env=env).stdout)
        assert st["daemon"]["idleExitS"] == 1800
        human = run_cli("--config", str(conf), "status", env=env).stdout
        assert "started on demand, exits after 30 min without a request" in human
        t0 = time.monotonic()
        second = run_cli("--config", str(conf), "search", "rye bread", "--json", env=env)
        took = time.monotonic() - t0
        assert second.returncode == 0 and "started a daemon" not in second.stderr
        assert json.loads(second.stdout)["results"] == json.loads(first.stdout)["results"]
        print(f"second search through the daemon: {took:.2f} s")
    finally:
        stop = run_cli("--config", str(conf), "serve", "--stop", env=env)
    assert stop.returncode == 0 and "stopped the daemon" in stop.stdout
    wait_for(lambda: not sock.exists(), timeout=30)
    again = run_cli("--config", str(conf), "serve", "--stop", env=env)
    assert again.returncode == 1 and "no daemon answers" in again.stdout


def test_two_searches_at_once_start_one_daemon(tmp_path: Path, workspace: Path) -> None:
    """Two commands that each found no daemon both started one and both said so
    (the second daemon then gave up): the first now holds a lock its daemon keeps,
    and the second starts none and says nothing."""
    import io
    import os

    from indexer.config.file import load_config
    from indexer.surfaces.cli.autostart import start_daemon, stop_daemon

    sock = tmp_path / "s.sock"
    conf = write(tmp_path, "c.toml", f'workspace = "{workspace}"\n[server]\nsocket = "{sock}"\n')
    cfg = load_config(conf)
    first, second = io.StringIO(), io.StringIO()
    env = os.environ.copy()
    try:
        os.environ.clear()
        os.environ.update({k: v for k, v in child_env().items() if k != "MEMINDEX_NO_DAEMON"})
        pid = start_daemon(cfg, ["--config", str(conf)], first)
        assert pid is not None and "started a daemon" in first.getvalue()
        assert start_daemon(cfg, ["--config", str(conf)], second) is None  # not answering yet
        assert second.getvalue() == ""
        wait_for(lambda: rpc(sock, "ping")["ok"], timeout=60)
        assert stop_daemon(sock, io.StringIO())
        wait_for(lambda: not sock.exists(), timeout=30)
        os.waitpid(pid, 0)  # the daemon gone (our child here), its lock with it:
        assert start_daemon(cfg, ["--config", str(conf)], io.StringIO()) is not None
        wait_for(lambda: rpc(sock, "ping")["ok"], timeout=60)
        assert stop_daemon(sock, io.StringIO())
    finally:
        os.environ.clear()
        os.environ.update(env)
