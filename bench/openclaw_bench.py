"""memindex against OpenClaw's own memory-core, inside the real OpenClaw gateway,
side by side.

One workspace (500 daily logs of real English sentences from tldr-pages, with
planted probes, and a MEMORY.md of entries with trigger phrases) and one agent
database (50 transcripts, imported by ``openclaw doctor --fix`` from legacy JSONL
as a 2026.9 upgrade does, probes planted in them too), copied into two OpenClaw
homes: memindex in the memory slot (``memindex openclaw install``, the default:
dreaming on) and memory-core (OpenClaw's default, no embedding provider, like
memindex here). Both gateways run at once and every measurement alternates between
them, so whatever else the machine does weighs on both:

* cold index: ``memindex index`` / ``openclaw memory index`` as processes, from an
  empty index (the CLI's start included: ``openclaw config file`` is printed as the
  floor of an OpenClaw process);
* ``memory_search`` through the gateway's ``/tools/invoke`` (what an agent's tool call
  costs): p50 / p95 over the queries, after a warm-up;
* probes found: the share of planted IDs whose search returns the planted file;
* lane 1: direct-chat turns (a scripted model; Active Memory on) that name a
  MEMORY.md entry's trigger phrase: how many of the planted entries each engine's
  deterministic lane injected into the reply's prompt.

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
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from common import percentile  # noqa: E402
from index_bench import make_daily_logs, real_sentences  # noqa: E402
from openclaw_home import TOKEN, Home, require_openclaw  # noqa: E402
from scripted_model import ScriptedModel  # noqa: E402

PROBES_PER_SOURCE = 20
TRIGGERS = 10  # MEMORY.md entries with a trigger phrase


def plant_triggers(ws: Path) -> list[str]:
    """MEMORY.md entries lane 1 should inject when a message names their trigger."""
    lines = ["# Memory", ""]
    words = []
    for i in range(TRIGGERS):
        word = f"LAMBDA{i:02d}"
        words.append(word)
        lines.append(f"- The spare key for locker {word} is in drawer {i}. "
                     f"<!-- trigger: locker {word} --> <!-- importance: 7 -->")  # fmt: skip
    (ws / "MEMORY.md").write_text("\n".join(lines) + "\n")
    return words


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


class Engine:
    """One engine's home, model and gateway, measured a step at a time."""

    def __init__(self, name: str, home: Home) -> None:
        self.name, self.home, self.out = name, home, {}
        self.conf = str(home.state / "openclaw.json")
        self.model = ScriptedModel().start()

    def check(self, r: subprocess.CompletedProcess[str]) -> None:
        if r.returncode != 0:
            raise SystemExit(f"bench: {self.name}: {r.args[-3:]} failed: {r.stderr[-1500:]}")

    def prepare(self) -> None:
        home = self.home
        cfg = home.config()
        cfg.setdefault("models", {})["mode"] = "merge"
        cfg["models"].setdefault("providers", {})["scripted"] = {
            "baseUrl": self.model.base_url, "apiKey": "bench", "api": "openai-completions",
            "models": [{"id": "agent", "name": "Scripted", "reasoning": False, "input": ["text"],
                        "contextWindow": 16000, "maxTokens": 1024,
                        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}}],
        }  # fmt: skip
        cfg["agents"].setdefault("defaults", {})["model"] = {"primary": "scripted/agent"}
        cfg.setdefault("plugins", {})["allow"] = ["memindex", "memory-core", "active-memory"]
        cfg["plugins"].setdefault("entries", {})["active-memory"] = {
            "enabled": True,
            "config": {"enabled": True, "agents": ["main"], "allowedChatTypes": ["direct"],
                       "mode": "escalate", "timeoutMs": 30000},
        }  # fmt: skip
        cfg.pop("gateway", None)
        home.write_config(cfg)
        if self.name == "memindex":
            self.out["cold index (s)"] = timed(
                lambda: self.check(home.memindex("--openclaw-config", self.conf, "index"))
            )
            self.check(home.memindex("--openclaw-config", self.conf, "openclaw", "install"))
        else:
            self.out["cold index (s)"] = timed(
                lambda: self.check(home.openclaw("memory", "index", "--force"))
            )
        home.start_gateway()

    def lane_one(self, word: str, n: int) -> bool:
        """A direct-chat turn naming a trigger: was its entry injected?"""
        before = len(self.model.requests)
        self.home.chat(f"agent:main:telegram:direct:{900 + n}", f"Where is the locker {word}?")
        text = json.dumps(self.model.requests[before:])
        return f"locker {word} is in drawer" in text and "active_memory_plugin" in text

    def close(self) -> None:
        self.home.close()
        self.model.stop()


def measure(engines: list[Engine], queries: list[str], probes: list[tuple[str, str]],
            words: list[str]) -> None:  # fmt: skip
    """Every step alternates between the engines."""
    for q in queries[:5]:  # warm-up: daemon, caches, the plugin's managers
        for e in engines:
            invoke_ms(e.home, q)
    times: dict[str, list[float]] = {e.name: [] for e in engines}
    for q in queries:
        for e in engines:
            times[e.name].append(invoke_ms(e.home, q)[0])
    for e in engines:
        e.out["search p50 (ms)"] = statistics.median(times[e.name])
        e.out["search p95 (ms)"] = percentile(times[e.name], 95)
    hits = {e.name: {"memory": 0, "sessions": 0} for e in engines}
    for pid, where in probes:
        for e in engines:
            _, details = invoke_ms(e.home, pid)
            if found(details, where):
                hits[e.name]["memory" if where.startswith("memory/") else "sessions"] += 1
    injected = {e.name: 0 for e in engines}
    for n, word in enumerate(words):
        for e in engines:
            injected[e.name] += e.lane_one(word, n)
    for e in engines:
        e.out["probes found (daily logs)"] = f"{hits[e.name]['memory']}/{PROBES_PER_SOURCE}"
        e.out["probes found (transcripts)"] = f"{hits[e.name]['sessions']}/{PROBES_PER_SOURCE}"
        e.out["lane 1 injected"] = f"{injected[e.name]}/{len(words)}"


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
        words = plant_triggers(ws)
        engines: list[Engine] = []
        try:
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
                engines.append(Engine(name, home))
            threads = [threading.Thread(target=e.prepare) for e in engines]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            measure(engines, queries, probes, words)
            results = {e.name: e.out for e in engines}
        finally:
            for e in engines:
                e.close()
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
