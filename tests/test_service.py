from __future__ import annotations

import configparser
import plistlib
import shlex
from pathlib import Path

from conftest import Runner

from indexer import service

REPO = Path(__file__).resolve().parent.parent


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


def test_service_install_writes_the_unit(cli: Runner) -> None:
    code, out, err = cli("service", "install", "--kind", "systemd")
    assert code == 0, err
    path = Path(out.split()[1])
    assert path == Path.home() / ".config/systemd/user/memindex.service"
    assert "serve" in path.read_text() and "@MEMINDEX@" not in path.read_text()
    code, out, _ = cli("service", "print", "--kind", "launchd")
    assert code == 0 and "<key>ProgramArguments</key>" in out
