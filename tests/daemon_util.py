"""Start the real daemon in a subprocess and talk to it over its socket."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lanes import fast_lane_refuses


def daemon_config(
    root: Path, ws: Path, sessions: Path, sessions_keys: str = "", extra: str = ""
) -> Path:
    """``root``/config.toml for agent "main" on ``ws`` with transcripts in
    ``sessions``; ``sessions_keys``: more ``[sessions]`` lines; ``extra``: more
    sections."""
    root.mkdir(parents=True, exist_ok=True)
    path = root / "config.toml"
    path.write_text(
        f'workspace = "{ws}"\nagentId = "main"\n[sessions]\ndir = "{sessions}"\n'
        f"{sessions_keys}{extra}",
        encoding="utf-8",
    )
    return path


def rpc_raw(sock_path: Path, payload: bytes, timeout: float = 10.0) -> list[Any]:
    """Send raw bytes, read reply lines until the server has answered each line."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(str(sock_path))
    s.sendall(payload)
    s.shutdown(socket.SHUT_WR)
    buf = b""
    while True:
        data = s.recv(65536)
        if not data:
            break
        buf += data
    s.close()
    return [json.loads(x) for x in buf.splitlines() if x.strip()]


def rpc(sock_path: Path, method: str, params: dict[str, Any] | None = None) -> Any:
    req = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
    (reply,) = rpc_raw(sock_path, json.dumps(req).encode() + b"\n")
    if "error" in reply:
        raise RuntimeError(reply["error"])
    return reply["result"]


def search_paths(sock_path: Path, query: str, **params: Any) -> list[str]:
    """The paths of a ``memory_search``'s results, in order."""
    res = rpc(sock_path, "memory_search", {"query": query, **params})["results"]
    return [r["path"] for r in res]


def wait_for(pred: Callable[[], Any], timeout: float = 20.0, interval: float = 0.05) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = pred()
            if last:
                return last
        except (OSError, RuntimeError, ValueError):
            pass
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout}s (last: {last!r})")


class DaemonProc:
    def __init__(self, config: Path, sock: Path, env: dict[str, str]) -> None:
        self.config = config
        self.sock = sock
        self.env = env
        self.proc: subprocess.Popen[str] | None = None

    def start(self, wait: bool = True) -> DaemonProc:
        fast_lane_refuses("a daemon")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "indexer.surfaces.cli",
                "--config",
                str(self.config),
                "serve",
                "--socket",
                str(self.sock),
            ],
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        if wait:
            try:
                wait_for(lambda: rpc(self.sock, "ping")["ok"])
                self.wait_idle()
            except Exception as exc:
                out = self.stop()  # a failed start must not leave a daemon running
                raise AssertionError(f"{exc}\n--- the daemon's output ---\n{out[-6000:]}") from exc
        return self

    def wait_idle(self, timeout: float = 30.0) -> None:
        seen: list[object] = []

        def idle() -> bool:
            st = rpc(self.sock, "status")
            seen[:] = [{k: st.get(k) for k in ("lastSync", "dirty", "busy", "errors", "progress")}]
            return st["lastSync"] is not None and not st["dirty"]

        try:
            wait_for(idle, timeout=timeout)
        except AssertionError as exc:
            raise AssertionError(f"{exc}; the last status: {seen}") from None

    def signal(self, sig: int) -> None:
        assert self.proc is not None
        self.proc.send_signal(sig)

    def kill(self) -> None:
        """SIGKILL, as a crash would, and reap it."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.proc = None

    def stop(self) -> str:
        if self.proc is None:
            return ""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        out = self.proc.stdout.read() if self.proc.stdout else ""
        self.proc = None
        return out


def run_cli(
    *args: str, env: dict[str, str] | None = None, timeout: float = 60, **kw: Any
) -> subprocess.CompletedProcess[str]:
    """``memindex ARGS`` as a process of its own, its output captured as text."""
    return subprocess.run(
        [sys.executable, "-m", "indexer.surfaces.cli", *args],
        env=child_env() if env is None else env,
        capture_output=True,
        text=True,
        timeout=timeout,
        **kw,
    )


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def heron_daemon(root: Path) -> DaemonProc:
    """A started daemon on a small workspace under ``root`` (MEMORY.md, one daily log
    about a heron), its sessions folder empty, watching with a 100 ms debounce."""
    ws = root / "ws"
    (ws / "memory").mkdir(parents=True, exist_ok=True)
    (ws / "MEMORY.md").write_text("# Memory\n- first\n", encoding="utf-8")
    (ws / "memory" / "2026-01-01.md").write_text("- heron sighting at the pond\n", encoding="utf-8")
    (root / "sessions").mkdir()
    cfg = daemon_config(root, ws, root / "sessions", extra="[sync]\nwatchDebounceMs = 100\n")
    return DaemonProc(cfg, root / "run" / "mi.sock", child_env()).start()
