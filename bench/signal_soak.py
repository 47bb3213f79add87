"""Reload and shutdown under file churn: SIGHUP and SIGTERM, again and again.

Runs the real daemon (``memindex serve``) on a generated workspace of daily logs plus
a sessions folder. A churn thread rewrites 20 memory files about every millisecond,
makes a new directory now and then (the watcher re-computes its watches) and appends
to a transcript. Each round:

1. sends ``--hups`` SIGHUPs 0.5 s apart and times each reload (signal -> the
   ``daemon.reloads`` counter of ``status`` moving on);
2. writes a probe fact and times it until a search returns it;
3. sends SIGTERM and times the exit (the socket must be gone), then starts the
   daemon again and checks every probe written so far is searchable.

The baseline in the same run is round 0: the same reload and shutdown with no churn.
PASS needs every reload under 10 s, every shutdown under 15 s, every probe found, and
no error in ``status``. Bounded: ``--minutes`` (default 3) of churned rounds.

    python bench/signal_soak.py [--minutes 3] [--hups 10] [--files 200]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


def rpc(sock: Path, method: str, params: dict[str, Any] | None = None) -> Any:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    try:
        s.connect(str(sock))
        req = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
        s.sendall(json.dumps(req).encode() + b"\n")
        buf = b""
        while not buf.endswith(b"\n"):
            data = s.recv(1 << 20)
            if not data:
                raise OSError("closed")
            buf += data
    finally:
        s.close()
    reply = json.loads(buf)
    if "error" in reply:
        raise RuntimeError(reply["error"])
    return reply["result"]


def until(pred: Any, timeout: float) -> float | None:
    """Seconds until ``pred()`` is true, or None after ``timeout``."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        try:
            if pred():
                return time.monotonic() - t0
        except (OSError, RuntimeError, ValueError):
            pass
        time.sleep(0.02)
    return None


class Churn:
    def __init__(self, ws: Path, sessions: Path) -> None:
        self.ws, self.sessions = ws, sessions
        self.stop = threading.Event()
        self.writes = 0
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        n = 0
        transcript = self.sessions / "churn.jsonl"
        while not self.stop.is_set():
            for i in range(20):
                (self.ws / "memory" / f"churn-{i}.md").write_text(f"- churn pass {n}\n")
                self.writes += 1
            if n % 200 == 0:
                (self.ws / "memory" / f"dir-{n}").mkdir(exist_ok=True)
            if n % 20 == 0:
                line = {"type": "message", "role": "user", "content": f"churn message {n}"}
                with transcript.open("a") as fh:
                    fh.write(json.dumps(line) + "\n")
            n += 1
            time.sleep(0.001)


def start(cfg: Path, sock: Path, log: Path) -> subprocess.Popen[bytes]:
    out = log.open("ab")
    proc = subprocess.Popen(
        [sys.executable, "-m", "indexer.surfaces.cli", "--config", str(cfg), "serve"],
        cwd=REPO,
        stdout=out,
        stderr=subprocess.STDOUT,
    )
    if until(lambda: rpc(sock, "status")["lastSync"] is not None, 120) is None:
        proc.kill()
        sys.exit(f"daemon did not start; see {log}")
    return proc


def round_(
    proc: subprocess.Popen[bytes], sock: Path, hups: int, probe: str, ws: Path
) -> dict[str, Any]:
    reloads: list[float] = []
    for _ in range(hups):
        before = rpc(sock, "status")["daemon"]["reloads"]
        t0 = time.monotonic()
        proc.send_signal(signal.SIGHUP)
        took = until(lambda b=before: rpc(sock, "status")["daemon"]["reloads"] > b, 30)
        reloads.append(took if took is not None else float("inf"))
        time.sleep(max(0.0, 0.5 - (time.monotonic() - t0)))
    (ws / "memory" / f"{probe}.md").write_text(f"- the probe word is {probe}\n")
    found = until(
        lambda: rpc(sock, "memory_search", {"query": probe, "minScore": 0})["results"], 30
    )
    st = rpc(sock, "status")
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=60)
        shutdown = time.monotonic() - t0
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        shutdown = float("inf")
    return {
        "reloads": reloads,
        "probe": found,
        "shutdown": shutdown,
        "socketGone": not sock.exists(),
        "lastError": st.get("lastError"),
        "stuck": st.get("stuck"),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=3.0, help="churned rounds for this long")
    ap.add_argument("--hups", type=int, default=10, help="SIGHUPs per round")
    ap.add_argument("--files", type=int, default=200, help="daily logs in the workspace")
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="memindex-soak-"))
    ws, sessions = root / "ws", root / "sessions"
    (ws / "memory").mkdir(parents=True)
    sessions.mkdir()
    (ws / "MEMORY.md").write_text("# Memory\n- long-term facts\n")
    for i in range(args.files):
        body = "".join(f"- log {i} entry {j} about topic{(i + j) % 41}\n" for j in range(30))
        (ws / "memory" / f"2025-{i:04d}.md").write_text(f"# Day {i}\n{body}")
    sock = root / "d.sock"
    cfg = root / "config.toml"
    cfg.write_text(
        f'workspace = "{ws}"\nagentId = "main"\nstateDir = "{root / "state"}"\n'
        f'[sessions]\ndir = "{sessions}"\ndeltaMessages = 5\nidleFlushMs = 500\n'
        f'[sync]\nwatchDebounceMs = 300\n[server]\nsocket = "{sock}"\n'
    )
    log = root / "daemon.log"
    print(f"workspace {ws} ({args.files} daily logs); daemon log {log}")
    rounds: list[dict[str, Any]] = []
    probes: list[str] = []
    churn = Churn(ws, sessions)
    deadline = None
    n = 0
    while True:
        proc = start(cfg, sock, log)
        missing = [
            p
            for p in probes
            if not rpc(sock, "memory_search", {"query": p, "minScore": 0})["results"]
        ]
        if rounds:
            rounds[-1]["missingAfterRestart"] = missing
        if n == 1:
            churn.thread.start()
            deadline = time.monotonic() + args.minutes * 60
        if deadline is not None and time.monotonic() > deadline:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)
            break
        probe = f"probe{n}x{os.getpid()}"
        probes.append(probe)
        r = round_(proc, sock, args.hups, probe, ws)
        r["churn"] = n > 0
        rounds.append(r)
        rl = r["reloads"]
        probe_ms = "never" if r["probe"] is None else f"{r['probe'] * 1000:.0f} ms"
        print(
            f"round {n:>3} {'churn' if n else 'idle '}: reload p50 "
            f"{statistics.median(rl) * 1000:7.0f} ms max {max(rl) * 1000:7.0f} ms; probe "
            f"{probe_ms}; shutdown {r['shutdown'] * 1000:.0f} ms; lastError {r['lastError']}",
            flush=True,
        )
        n += 1
    churn.stop.set()
    base, hot = rounds[0], rounds[1:]
    all_reloads = [x for r in hot for x in r["reloads"]]
    shutdowns = [r["shutdown"] for r in hot]
    problems = []
    if not hot:
        problems.append("no churned round ran")
    if any(x > 10 for r in rounds for x in r["reloads"]):
        problems.append("a reload took over 10 s (or never finished)")
    if any(r["shutdown"] > 15 or not r["socketGone"] for r in rounds):
        problems.append("a shutdown took over 15 s or left the socket")
    if any(r["probe"] is None for r in rounds):
        problems.append("a probe was not searchable within 30 s")
    if any(r.get("missingAfterRestart") for r in rounds):
        problems.append("a probe was missing after a restart")
    if any(r["lastError"] or r["stuck"] for r in rounds):
        problems.append("status reported an error")
    print()
    print(
        f"churn writes: {churn.writes}; rounds: {len(hot)} churned + 1 idle; "
        f"SIGHUPs: {sum(len(r['reloads']) for r in rounds)}"
    )
    if hot:
        print(
            f"reload  idle p50 {statistics.median(base['reloads']) * 1000:.0f} ms | churn p50 "
            f"{statistics.median(all_reloads) * 1000:.0f} ms, max {max(all_reloads) * 1000:.0f} ms"
        )
        print(
            f"shutdown idle {base['shutdown'] * 1000:.0f} ms | churn p50 "
            f"{statistics.median(shutdowns) * 1000:.0f} ms, max {max(shutdowns) * 1000:.0f} ms"
        )
    print("PASS" if not problems else "FAIL: " + "; ".join(problems))
    sys.exit(0 if not problems else 1)


if __name__ == "__main__":
    main()
