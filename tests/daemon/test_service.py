from __future__ import annotations

import configparser
import plistlib
import shlex
import subprocess
from pathlib import Path

import pytest
from conftest import Runner, write
from daemon_util import child_env, rpc, wait_for

from indexer.surfaces import service

REPO = Path(__file__).resolve().parents[2]


def test_systemd_unit_runs_memindex_serve() -> None:
    text = service.render("systemd")
    cp = configparser.ConfigParser(strict=False, interpolation=None)
    cp.read_string(text)
    argv = shlex.split(cp["Service"]["ExecStart"])
    assert Path(argv[0]).is_file() and Path(argv[0]).name == "memindex"
    assert argv[1:] == ["serve"]
    assert cp["Service"]["Restart"] == "on-failure"
    assert cp["Install"]["WantedBy"] == "default.target"


def test_repository_units_match_the_embedded_ones() -> None:
    import re

    unit = (REPO / "systemd" / "memindex.service").read_text()
    unit = "\n".join(ln for ln in unit.splitlines() if not ln.startswith("#")) + "\n"
    assert unit == service.template("systemd")
    plist = (REPO / "launchd" / "com.memindex.daemon.plist").read_text()
    assert re.sub(r"<!--.*?-->\n", "", plist, flags=re.S) == service.template("launchd")


def test_launchd_plist_runs_memindex_serve(tmp_path: Path) -> None:
    plist = plistlib.loads(service.render("launchd", home=tmp_path).encode())
    args = plist["ProgramArguments"]
    assert Path(args[0]).is_file() and Path(args[0]).name == "memindex" and args[1:] == ["serve"]
    assert plist["Label"] == "com.memindex.daemon" and plist["RunAtLoad"] is True
    assert plist["KeepAlive"] == {"SuccessfulExit": False}
    assert plist["StandardErrorPath"].startswith(str(tmp_path))


def test_service_install_writes_the_unit(cli: Runner, workspace: Path) -> None:
    code, out, err = cli("--workspace", str(workspace), "service", "install", "--kind", "systemd")
    assert code == 0, err
    path = Path(out.split()[1])
    assert path == Path.home() / ".config/systemd/user/memindex.service"
    assert "serve" in path.read_text() and "@MEMINDEX@" not in path.read_text()
    code, out, _ = cli("--workspace", str(workspace), "service", "print", "--kind", "launchd")
    assert code == 0 and "<key>ProgramArguments</key>" in out


def test_a_unit_that_could_not_start_is_not_written(cli: Runner, tmp_path: Path) -> None:
    code, _, err = cli("--workspace", str(tmp_path / "missing"), "service", "install")
    assert code == 2 and "workspace" in err
    assert not (Path.home() / ".config/systemd/user/memindex.service").exists()


def _serve_argv(kind: str, options: list[str]) -> list[str]:
    if kind == "systemd":
        cp = configparser.ConfigParser(strict=False, interpolation=None)
        cp.read_string(service.render("systemd", args=options))
        line = cp["Service"]["ExecStart"]
        assert "%" not in line.replace("%%", "")
        return shlex.split(line.replace("%%", "%").replace("$$", "$"))
    plist = plistlib.loads(service.render("launchd", args=options).encode())
    return list(plist["ProgramArguments"])


@pytest.mark.parametrize("kind", ["systemd", "launchd"])
def test_the_units_command_starts_a_daemon_that_answers(
    kind: str, tmp_path: Path, cli: Runner
) -> None:
    ws = tmp_path / "my notes $HOME 100%"  # spaces, a dollar and a percent sign
    write(ws, "MEMORY.md", "- the gateway host is pantry-pi\n")
    sock = tmp_path / "s.sock"
    conf = write(tmp_path, "c.toml", f'[server]\nsocket = "{sock}"\n')
    code, out, err = cli(
        "--config",
        str(conf),
        "--workspace",
        str(ws),
        "--agent",
        "main",
        "service",
        "print",
        "--kind",
        kind,
    )
    assert code == 0, err
    argv = _serve_argv(kind, ["--config", str(conf), "--workspace", str(ws), "--agent", "main"])
    assert argv[1:] == ["--config", str(conf), "--workspace", str(ws), "--agent", "main", "serve"]
    assert (argv[0] in out) and Path(argv[0]).is_file()
    proc = subprocess.Popen(
        argv, env=child_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        pong = wait_for(lambda: rpc(sock, "ping"), timeout=30)
        assert pong["ok"] and "main" in pong["agents"]
        wait_for(lambda: rpc(sock, "memory_search", {"query": "pantry-pi"})["results"])
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_service_install_follows_xdg_and_pins_the_config_it_found(
    cli: Runner, workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    xdg = tmp_path / "elsewhere"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(xdg))
    conf = write(xdg, "memindex/config.toml", f'workspace = "{workspace}"\n')
    code, out, err = cli("service", "install", "--kind", "systemd")
    assert code == 0, err
    unit = xdg / "systemd/user/memindex.service"
    assert Path(out.split()[1]) == unit
    cp = configparser.ConfigParser(strict=False, interpolation=None)
    cp.read_string(unit.read_text())
    argv = shlex.split(cp["Service"]["ExecStart"])
    assert argv[1:] == ["--config", str(conf), "serve"]  # found through XDG: named


def test_a_unit_whose_provider_cannot_load_is_refused(
    cli: Runner, workspace: Path, tmp_path: Path
) -> None:
    conf = write(
        tmp_path,
        "c.toml",
        f'workspace = "{workspace}"\n[provider]\nname = "local"\n'
        f'[provider.local]\nmodelPath = "{tmp_path / "missing.gguf"}"\n',
    )
    code, out, err = cli("--config", str(conf), "service", "print")
    assert code == 2 and "the local provider cannot be set up" in err, err
    assert "missing.gguf" in err and 'provider.name = "none"' in err and out == ""
