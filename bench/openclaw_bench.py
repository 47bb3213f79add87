"""memindex against OpenClaw's own memory-core, inside the real OpenClaw gateway.

One workspace (500 daily logs of real English sentences from tldr-pages, with
planted probes) and one agent database (50 transcripts, imported by ``openclaw
doctor --fix`` from legacy JSONL as a 2026.9 upgrade does, probes planted in them
too), copied into two OpenClaw homes: memindex in the memory slot (``memindex
openclaw install``) and memory-core (OpenClaw's default, no embedding provider,
like memindex here). For each, in the same run:

* cold index: ``memindex index`` / ``openclaw memory index`` as processes, from an
  empty index (the CLI's start included: ``openclaw config file`` is printed as the
  floor of an OpenClaw process);
* ``memory_search`` through the gateway's ``/tools/invoke`` (what an agent's tool call
  costs): p50 / p95 over the queries, after a warm-up;
* probes found: the share of planted IDs whose search returns the planted file.

Needs OpenClaw (bash scripts/setup_openclaw.sh) and ../shared (tldr-pages).

    python bench/openclaw_bench.py [--logs 500] [--transcripts 50] [--queries 100]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from common import percentile  # noqa: E402
from index_bench import make_daily_logs, real_sentences  # noqa: E402
from openclaw_home import TOKEN, Home, require_openclaw  # noqa: E402

PROBES_PER_SOURCE = 20


def plant(ws: Path, state: Path, n_transcripts: int, sentences: list[str]) -> list[tuple[str, str]]:
    """Probe IDs in daily logs and in transcripts: [(id, where it was put)]."""
    rng = random.Random(11)
    probes: list[tuple[str, str]] = []
    logs = sorted((ws / "memory").glob("*.md"))
    for i in range(PROBES_PER_SOURCE):
        f = rng.choice(logs)
        pid = f"PROBE-M{i:03d}"
        with f.open("a") as fh:
            fh.write(f"- The parking permit for the depot is {pid}.\n")
        probes.append((pid, f"memory/{f.name}"))
    sessions = state / "agents/main/sessions"
    sessions.mkdir(parents=True, exist_ok=True)
    index: dict[str, Any] = {}
    planted: dict[int, list[str]] = {}
    for i in range(PROBES_PER_SOURCE):
        planted.setdefault(rng.randrange(n_transcripts), []).append(f"PROBE-S{i:03d}")
    for t in range(n_transcripts):
        sid = f"bench{t:03d}"
        lines = [{"type": "session", "version": 3, "id": sid,
                  "timestamp": "2026-10-01T10:00:00.000Z", "cwd": "/tmp"}]  # fmt: skip
        parent = None
        for m in range(40):
            text = " ".join(rng.choice(sentences) for _ in range(3))
            if m == 7:
                for pid in planted.get(t, []):
                    text += f" The locker code for the gym is {pid}."
                    probes.append((pid, sid))
            mid = f"{sid}-m{m}"
            lines.append({
                "type": "message", "id": mid, "parentId": parent,
                "timestamp": f"2026-10-01T10:{m:02d}:00.000Z",
                "message": {"role": "user" if m % 2 == 0 else "assistant",
                            "content": [{"type": "text", "text": text}]},
            })  # fmt: skip
            parent = mid
        (sessions / f"{sid}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
        index[f"agent:main:bench{t:03d}"] = {"sessionId": sid, "updatedAt": 1795600000000 + t}
    (sessions / "sessions.json").write_text(json.dumps(index))
    return probes


def timed(fn: Any) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def invoke_ms(home: Home, query: str) -> tuple[float, dict[str, Any]]:
    body = json.dumps({"tool": "memory_search", "args": {"query": query}, "agentId": "main"})
    req = urllib.request.Request(
        f"http://127.0.0.1:{home.port}/tools/invoke",
        data=body.encode(),
        headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
    )
    t0 = time.perf_counter()
    with urllib.request.urlopen(req, timeout=120) as resp:
        answer = json.loads(resp.read())
    took = (time.perf_counter() - t0) * 1000
    return took, answer.get("result", {}).get("details", {})


def found(details: dict[str, Any], where: str) -> bool:
    for r in details.get("results") or []:
        path = str(r.get("path", ""))
        if path.endswith(where) or where in path:
            return True
    return False


def run_engine(
    name: str, home: Home, queries: list[str], probes: list[tuple[str, str]]
) -> dict[str, Any]:
    conf = str(home.state / "openclaw.json")
    out: dict[str, Any] = {}

    def check(r: subprocess.CompletedProcess[str]) -> None:
        if r.returncode != 0:
            raise SystemExit(f"bench: {name}: {r.args[-3:]} failed: {r.stderr[-1500:]}")

    if name == "memindex":
        cold = timed(lambda: check(home.memindex("--openclaw-config", conf, "index")))
        out["cold index (s)"] = cold
        check(home.memindex("--openclaw-config", conf, "openclaw", "install", "--no-dreaming"))
    else:
        out["cold index (s)"] = timed(lambda: check(home.openclaw("memory", "index", "--force")))
    home.start_gateway()
    try:
        for q in queries[:5]:  # warm-up: daemon, caches, the plugin's managers
            invoke_ms(home, q)
        times = [invoke_ms(home, q)[0] for q in queries]
        out["search p50 (ms)"] = statistics.median(times)
        out["search p95 (ms)"] = percentile(times, 95)
        hits = {"memory": 0, "sessions": 0}
        for pid, where in probes:
            _, details = invoke_ms(home, pid)
            if found(details, where):
                hits["memory" if where.startswith("memory/") else "sessions"] += 1
        out["probes found (daily logs)"] = f"{hits['memory']}/{PROBES_PER_SOURCE}"
        out["probes found (transcripts)"] = f"{hits['sessions']}/{PROBES_PER_SOURCE}"
    finally:
        home.close()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--logs", type=int, default=500, help="daily logs in the workspace")
    ap.add_argument("--transcripts", type=int, default=50, help="transcripts in the database")
    ap.add_argument("--queries", type=int, default=100, help="timed searches per engine")
    args = ap.parse_args()
    require_openclaw()
    sentences = real_sentences()
    rng = random.Random(5)
    with tempfile.TemporaryDirectory(prefix="openclaw-bench-") as tmp:
        base = Home(Path(tmp) / "base")
        ws = base.root / "ws"
        make_daily_logs(ws, args.logs, sentences=sentences)
        probes = plant(ws, base.state, args.transcripts, sentences)
        base.write_config(
            {
                "agents": {"list": [{"id": "main", "default": True, "workspace": str(ws)}]},
                "memory": {"search": {"sources": ["memory", "sessions"]}},
                "tools": {"toolSearch": False},
            }
        )
        t = timed(lambda: base.openclaw("doctor", "--fix", "--non-interactive", timeout=900))
        print(f"openclaw doctor --fix imported {args.transcripts} transcripts in {t:.1f} s")
        floor = timed(lambda: base.openclaw("config", "file"))
        print(f"openclaw config file (an OpenClaw process's floor): {floor:.1f} s")
        queries = [" ".join(rng.choice(s.split()) for _ in range(3)) for s in sentences]
        queries = rng.sample(queries, args.queries)
        results: dict[str, dict[str, Any]] = {}
        for name in ("memindex", "memory-core"):
            home = Home(Path(tmp) / name)
            shutil.copytree(ws, home.root / "ws")
            shutil.copytree(base.state / "agents", home.state / "agents", dirs_exist_ok=True)
            cfg = json.loads((base.state / "openclaw.json").read_text())
            agents = cfg["agents"]  # doctor may have moved agents.list to agents.entries
            for entry in agents.get("list", []) + list(agents.get("entries", {}).values()):
                entry["workspace"] = str(home.root / "ws")
            cfg.pop("gateway", None)
            home.write_config(cfg)
            results[name] = run_engine(name, home, queries, probes)
    keys = list(results["memindex"])
    print(f"\n{'':<28}{'memindex':>14}{'memory-core':>14}")
    for k in keys:
        a, b = results["memindex"][k], results["memory-core"][k]
        fa = f"{a:.1f}" if isinstance(a, float) else str(a)
        fb = f"{b:.1f}" if isinstance(b, float) else str(b)
        print(f"{k:<28}{fa:>14}{fb:>14}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
