"""A configured embedding provider that cannot load is said loudly on every surface,
with its cause and the fix (it used to be "no embedding provider configured" at INFO,
or nothing at all, while searches quietly stayed keyword-only); a working one is
"configured" / "ready", never "not configured", before its vectors are built."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import Runner, cli_json, write
from daemon_util import DaemonProc, child_env, rpc, run_cli


def _config(tmp_path: Path, workspace: Path, model: str) -> str:
    text = (
        f'workspace = "{workspace}"\nindexPath = "{tmp_path / "i.sqlite"}"\n'
        f'[provider.local]\nmodelPath = "{model}"\n'
    )
    return str(write(tmp_path, "c.toml", text))


def test_a_local_model_that_is_missing_is_loud_everywhere(
    cli: Runner, tmp_path: Path, workspace: Path
) -> None:
    conf = _config(tmp_path, workspace, str(tmp_path / "not-built.gguf"))
    code, out, err = cli("--config", conf, "index")
    assert code == 0 and "warning: no vectors, keyword search only" in err, err
    assert "not-built.gguf does not exist" in err and "fix:" in err
    st = cli_json(cli, "--config", conf, "status", "--json")
    ps = st["providerState"]
    assert ps["name"] == "local" and ps["state"] == "failed" and "model pull" in ps["fix"]
    assert "local provider failed" in st["vector"]["reason"]
    code, out, _ = cli("--config", conf, "status")
    assert "provider:  local FAILED" in out and "fix:" in out
    res = cli_json(cli, "--config", conf, "search", "rye bread", "--json")
    assert res["mode"] == "keyword" and "local provider failed" in res["fallback"]
    assert "no embedding provider configured" not in res["fallback"]
    code, out, err = cli("--config", conf, "search", "rye bread", "--mode", "hybrid")
    assert code == 0 and "--mode hybrid could not be honoured" in err and "MEMORY.md" in out


def test_index_says_a_failed_provider_once(tmp_path: Path, workspace: Path) -> None:
    """``memindex index`` in a process of its own (its log on stderr): the failed
    provider is said once, by the CLI, not logged again by the index it syncs."""
    conf = _config(tmp_path, workspace, str(tmp_path / "not-built.gguf"))
    done = run_cli("--config", conf, "index")
    assert done.returncode == 0 and "warning: no vectors" in done.stderr, done.stderr
    assert done.stderr.count("provider failed") == 1, done.stderr


@pytest.mark.slow
def test_the_daemon_logs_a_failed_provider_as_a_warning(tmp_path: Path, workspace: Path) -> None:
    conf = Path(_config(tmp_path, workspace, str(tmp_path / "gone.gguf")))
    d = DaemonProc(conf, tmp_path / "d.sock", child_env()).start()
    try:
        st = rpc(d.sock, "status")
        assert st["providerState"]["state"] == "failed"
        rep = rpc(d.sock, "reindex")
        assert rep["providerState"]["state"] == "failed"
    finally:
        out = d.stop()
    assert "WARNING" in out and "KEYWORD SEARCH ONLY" in out and "gone.gguf" in out, out


def test_a_working_provider_is_not_called_missing_before_its_vectors_exist(
    cli: Runner, tmp_path: Path, workspace: Path, model_path: Path
) -> None:
    conf = _config(tmp_path, workspace, str(model_path))
    st = cli_json(cli, "--config", conf, "status", "--json")  # nothing indexed yet
    assert st["providerState"]["state"] == "configured" and st["providerState"]["name"] == "local"
    assert st["vector"]["reason"] == "vectors not built yet"
    assert "no embedding provider" not in json.dumps(st)
    cli_json(cli, "--config", conf, "index", "--json")
    st = cli_json(cli, "--config", conf, "status", "--json")
    assert st["mode"] == "hybrid" and st["providerState"]["state"] == "ready"


def test_no_provider_by_choice_is_quiet_and_says_how(cli: Runner, workspace: Path) -> None:
    code, _, err = cli("--workspace", str(workspace), "index")
    assert code == 0 and "warning" not in err
    st = cli_json(cli, "--workspace", str(workspace), "status", "--json")
    assert st["providerState"]["state"] == "none" and "model pull" in st["providerState"]["fix"]
