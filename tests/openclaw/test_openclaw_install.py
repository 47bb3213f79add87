"""`memindex openclaw install | uninstall` as a recorded, idempotent change of one
openclaw.json (reliability round 4: install twice then uninstall left memory-core
denied and the agent with no memory tool; a daemon that exited at once left the
config changed with no record; uninstall put memory-core in a slot another plugin
had; a second OpenClaw config was served by the first one's daemon).

The `openclaw` these run is tests/fake_openclaw.py (the same three calls, on the
file, in milliseconds); the real OpenClaw runs install and uninstall in
tests/openclaw/test_openclaw_plugin.py. The daemons are real."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import write
from daemon_util import rpc, run_cli, search_paths

FAKE = Path(__file__).resolve().parents[1] / "fake_openclaw.py"


class Setup:
    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "run").mkdir(mode=0o700)
        self.state = root / "oc-state"
        self.env = {
            **os.environ,
            "HOME": str(root / "home"),
            "OPENCLAW_STATE_DIR": str(self.state),
            "XDG_RUNTIME_DIR": str(root / "run"),
            "XDG_STATE_HOME": str(root / "xdg-state"),
            "XDG_CONFIG_HOME": str(root / "xdg-config"),
            "MEMINDEX_OPENCLAW": f"{sys.executable} {FAKE}",
            "FAKE_OPENCLAW_LOG": str(root / "openclaw-calls.log"),
            "PYTHONUNBUFFERED": "1",
        }
        self.env.pop("OPENCLAW_CONFIG_PATH", None)
        self.sockets: set[Path] = set()

    def config(self, path: Path, ws: Path, extra: dict[str, Any] | None = None) -> Path:
        write(ws, "MEMORY.md", f"# Memory\n- notes of {ws.name}: {ws.name.upper()}-1\n")
        cfg = {"agents": {"list": [{"id": "main", "default": True, "workspace": str(ws)}]}}
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({**cfg, **(extra or {})}))
        return path

    def memindex(self, conf: Path | None, *args: str) -> Any:
        pre = ["--openclaw-config", str(conf)] if conf else []
        return run_cli(*pre, "openclaw", *args, env=self.env, timeout=180)

    def read(self, conf: Path) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(conf.read_text())
        return data

    def close(self) -> None:
        for sock in (self.root / "run").glob("*.sock"):
            try:
                pid = rpc(sock, "status", {})["daemon"]["pid"]
                os.kill(pid, signal.SIGTERM)
            except (OSError, RuntimeError, KeyError):
                pass


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[Setup]:
    s = Setup(tmp_path)
    try:
        yield s
    finally:
        s.close()


def test_install_twice_then_uninstall_restores_exactly(setup: Setup) -> None:
    before = {
        "tools": {"deny": ["web_fetch"]},
        "plugins": {"allow": ["other-memory"], "slots": {"memory": "other-memory"}},
    }
    conf = setup.config(setup.state / "openclaw.json", setup.root / "ws", before)
    original = setup.read(conf)
    for _ in range(2):
        r = setup.memindex(conf, "install", "--json")
        assert r.returncode == 0, r.stdout + r.stderr
        cfg = setup.read(conf)
        assert cfg["plugins"]["slots"]["memory"] == "memindex"
        assert cfg["tools"]["deny"] == ["web_fetch", "memory-core"]
        assert cfg["plugins"]["allow"] == ["other-memory", "memindex"]
    sock = Path(json.loads(r.stdout)["daemon"]["socket"])
    assert search_paths(sock, "WS-1") == ["MEMORY.md"]
    r = setup.memindex(conf, "uninstall")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "other-memory has it again" in r.stdout
    after = setup.read(conf)
    assert after["plugins"]["slots"] == original["plugins"]["slots"]
    assert after["tools"] == original["tools"] and after["plugins"]["allow"] == ["other-memory"]
    assert "memindex" not in json.dumps(after["plugins"])
    assert not sock.exists()  # the daemon install started is stopped
    # nothing installed: uninstall changes nothing, and says so
    r = setup.memindex(conf, "uninstall")
    assert r.returncode == 0 and "nothing changed" in r.stdout, r.stdout + r.stderr
    assert setup.read(conf) == after


def test_a_failed_install_is_undone_at_once(setup: Setup) -> None:
    ws = setup.root / "ws"
    conf = setup.config(setup.state / "openclaw.json", ws, {"tools": {"deny": ["web_fetch"]}})
    (ws / "MEMORY.md").unlink()
    ws.rmdir()
    ws.write_text("a file where the workspace should be\n")  # the daemon exits at start
    original = setup.read(conf)
    t0 = time.monotonic()
    r = setup.memindex(conf, "install")
    took = time.monotonic() - t0
    assert r.returncode != 0
    said = r.stdout + r.stderr
    assert "install failed" in said and "exited at once" in said, said
    assert "undone: openclaw.json, the plugin" in said, said
    assert took < 45, took  # not the 60 s wait for an answer
    after = setup.read(conf)
    assert "memindex" not in json.dumps(after["plugins"]), after
    assert after["tools"] == original["tools"] and after["agents"] == original["agents"]
    r = setup.memindex(conf, "uninstall")
    assert r.returncode == 0 and "nothing changed" in r.stdout, r.stdout + r.stderr


def test_two_openclaw_configs_get_their_own_daemons(setup: Setup) -> None:
    a = setup.config(setup.state / "openclaw.json", setup.root / "alpha")
    b = setup.config(setup.root / "profile-b" / "openclaw.json", setup.root / "beta")
    for conf in (a, b):
        r = setup.memindex(conf, "install", "--json")
        assert r.returncode == 0, r.stdout + r.stderr
        assert json.loads(r.stdout)["daemon"]["started"] is True  # never the other's
    sock_a = Path(json.loads(setup.memindex(a, "install", "--json").stdout)["daemon"]["socket"])
    entry_b = setup.read(b)["plugins"]["entries"]["memindex"]["config"]
    sock_b = Path(entry_b["socket"])  # the plugin of B talks to B's daemon
    assert sock_a != sock_b
    assert search_paths(sock_a, "ALPHA-1") == ["MEMORY.md"] and search_paths(sock_a, "BETA-1") == []
    assert search_paths(sock_b, "BETA-1") == ["MEMORY.md"] and search_paths(sock_b, "ALPHA-1") == []
    r = setup.memindex(None, "uninstall")
    assert r.returncode != 0 and str(a) in r.stdout + r.stderr and str(b) in r.stdout + r.stderr
    assert setup.memindex(b, "uninstall").returncode == 0
    r = setup.memindex(None, "uninstall")  # the one left
    assert r.returncode == 0 and str(a) in r.stdout, r.stdout + r.stderr
    for conf in (a, b):
        assert "memindex" not in json.dumps(setup.read(conf)["plugins"])


def test_a_config_nested_too_deep_is_a_one_line_error(setup: Setup) -> None:
    conf = setup.state / "openclaw.json"
    conf.parent.mkdir(parents=True)
    conf.write_text('{"agents": ' + "[" * 5000 + "]" * 5000 + "}")
    r = setup.memindex(conf, "install")
    assert r.returncode != 0
    err = (r.stdout + r.stderr).strip()
    assert "nested too deep" in err and "RecursionError" not in err, err
    assert len(err.splitlines()) <= 2, err


def test_install_lets_the_hooks_read_the_conversation_and_says_what_it_reused(
    setup: Setup,
) -> None:
    conf = setup.config(setup.state / "openclaw.json", setup.root / "ws")
    r = setup.memindex(conf, "install")
    assert r.returncode == 0 and "(started)" in r.stdout, r.stdout + r.stderr
    entry = setup.read(conf)["plugins"]["entries"]["memindex"]
    # OpenClaw drops a non-bundled plugin's conversation hooks (standing intents)
    # without this key
    assert entry["hooks"] == {"allowConversationAccess": True}
    assert entry["config"]["install"]["addedDeny"] is True
    again = setup.memindex(conf, "install")
    assert again.returncode == 0 and "(already running)" in again.stdout, again.stdout
    r = setup.memindex(conf, "uninstall")
    assert r.returncode == 0 and "memindex" not in json.dumps(setup.read(conf)["plugins"])


def test_uninstall_without_its_record_reads_what_install_changed_from_openclaw_json(
    setup: Setup,
) -> None:
    """The state folder deleted (deleting index files is safe): uninstall still puts
    memory-core's tools back and stops the daemon install started, from the copy of
    the record install keeps in openclaw.json."""
    import shutil

    conf = setup.config(setup.state / "openclaw.json", setup.root / "ws")
    r = setup.memindex(conf, "install", "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    sock = Path(json.loads(r.stdout)["daemon"]["socket"])
    shutil.rmtree(setup.root / "xdg-state" / "memindex" / "openclaw-installs")
    r = setup.memindex(conf, "uninstall")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "memory-core has it again, with its memory tools" in r.stdout
    after = setup.read(conf)
    assert "tools" not in after and "memindex" not in json.dumps(after["plugins"])
    assert not sock.exists()


def test_uninstall_that_cannot_know_says_what_to_undo_by_hand(setup: Setup) -> None:
    """No record and no copy in openclaw.json (a damaged record, an install by an
    earlier release): memory-core stays in tools.deny, and uninstall says so instead
    of claiming the memory tools are back."""
    conf = setup.config(setup.state / "openclaw.json", setup.root / "ws")
    assert setup.memindex(conf, "install").returncode == 0
    records = setup.root / "xdg-state" / "memindex" / "openclaw-installs"
    for f in records.glob("*.json"):
        f.write_text("{not json")
    cfg = setup.read(conf)
    cfg["plugins"]["entries"]["memindex"]["config"].pop("install")
    conf.write_text(json.dumps(cfg))
    r = setup.memindex(conf, "uninstall")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "with its memory tools" not in r.stdout
    assert "to do by hand" in r.stdout and "tools.deny" in r.stdout
    assert setup.read(conf)["tools"]["deny"] == ["memory-core"]
