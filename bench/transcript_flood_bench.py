"""How long a memory edit waits while the daemon reads a flood of huge transcript
messages, from OpenClaw's agent database and from a JSONL file, next to the same
edit with nothing else to do (same run, same daemon settings).

    python bench/transcript_flood_bench.py            # 64 MiB each (16 x 4 MiB)
    python bench/transcript_flood_bench.py --mib 32   # smaller

For each case: seconds from writing a memory file to finding it through the socket,
the writer's longest ``noProgressS`` seen meanwhile, a search that matches the big
messages (ms), the bytes ``memory_get`` returns of one big message, and the daemon's
peak RSS. Reliability round 4 found 53 s for the database (JSONL 0.65 s), 9-10 s
searches and a 4 MB memory_get."""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from indexer.errors import MemindexError  # noqa: E402
from indexer.surfaces.client import call  # noqa: E402

DDL = """
PRAGMA journal_mode=WAL;
CREATE TABLE session_windows (session_id TEXT PRIMARY KEY, session_key TEXT NOT NULL);
CREATE TABLE transcript_events (session_id TEXT NOT NULL, seq INTEGER NOT NULL, event_json TEXT,
  created_at INTEGER NOT NULL, event_zstd BLOB, event_utf8_bytes INTEGER, navigation_json TEXT,
  PRIMARY KEY (session_id, seq));
CREATE TABLE transcript_rewrite_watermarks (session_id TEXT PRIMARY KEY, generation TEXT NOT NULL,
  updated_at INTEGER NOT NULL);
PRAGMA user_version=23;
"""


def message(text: str) -> str:
    body = {"role": "user", "content": [{"type": "text", "text": text}]}
    return json.dumps({"type": "message", "message": body})


def big(i: int, size: int) -> str:
    words = " ".join(f"flood{i}w{k}" for k in range(size // 12))
    return message(f"BIGMSG-{i} {words}")[: size - 10] + '"}]}}'


def rss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def run_case(kind: str, mib: int, tmp: Path) -> dict[str, object]:
    ws, state = tmp / kind / "ws", tmp / kind / "state"
    sessions = state / "agents/main/sessions"
    (ws / "memory").mkdir(parents=True)
    sessions.mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Memory\n- nothing yet\n")
    db_file = state / "agents/main/agent/openclaw-agent.sqlite"
    sock = tmp / kind / "d.sock"
    conf = tmp / kind / "c.toml"
    conf.write_text(
        f'workspace = "{ws}"\nagentId = "main"\nstateDir = "{tmp / kind / "idx"}"\n'
        f'[sessions]\ndir = "{sessions}"\ndatabase = "{db_file}"\n'
        f'[server]\nsocket = "{sock}"\n'
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "indexer.surfaces.cli", "--config", str(conf), "serve"],
        stdout=subprocess.DEVNULL,
        stderr=open(tmp / kind / "daemon.log", "wb"),  # noqa: SIM115
        start_new_session=True,
    )
    try:
        t0 = time.monotonic()
        while True:
            try:
                if call(sock, "status", {"agent": "main"}, timeout=2)["lastSync"] is not None:
                    break
            except MemindexError:
                pass
            if time.monotonic() - t0 > 60:
                raise SystemExit("the daemon did not start")
            time.sleep(0.1)
        n = max(1, mib // 4)
        size = 4 * 1024 * 1024 - 4096
        if kind == "database":
            import apsw

            db_file.parent.mkdir(parents=True)
            db = apsw.Connection(str(db_file))
            list(db.execute(DDL))
            with db:
                db.execute("INSERT INTO session_windows VALUES('s1', 'agent:main:main')")
                db.execute("INSERT INTO transcript_rewrite_watermarks VALUES('s1', 'g', 0)")
                for i in range(n):
                    db.execute(
                        "INSERT INTO transcript_events VALUES('s1', ?, ?, 0, NULL, NULL, NULL)",
                        (i, big(i, size)),
                    )
            db.close()
        elif kind == "jsonl":
            with open(sessions / "s1.jsonl", "w") as f:
                for i in range(n):
                    f.write(big(i, size) + "\n")
        time.sleep(0.2)  # the flood is on disk; now the edit
        marker = f"EDIT-{kind.upper()}-4242"
        edited = time.monotonic()
        (ws / "memory/2026-11-27.md").write_text(f"# Today\n- {marker}\n")
        stall = 0.0
        peak = 0
        found_after = None
        while time.monotonic() - edited < 300:
            st = call(sock, "status", {"agent": "main"}, timeout=30)
            busy = st.get("busy") or {}
            stall = max(stall, float(busy.get("noProgressS") or 0))
            peak = max(peak, rss_kb(proc.pid))
            res = call(sock, "memory_search", {"query": marker, "agent": "main"}, timeout=30)
            if any(marker in r["snippet"] for r in res["results"]):
                found_after = time.monotonic() - edited
                break
            time.sleep(0.1)
        out: dict[str, object] = {
            "case": kind,
            "edit searchable after s": None if found_after is None else round(found_after, 2),
            "max noProgressS": round(stall, 1),
        }
        if kind != "idle":  # wait for the flood to be indexed, then search and get it
            t1 = time.monotonic()
            while time.monotonic() - t1 < 600:
                res = call(
                    sock, "memory_search", {"query": "BIGMSG-0", "agent": "main"}, timeout=60
                )
                if res["results"]:
                    break
                time.sleep(0.5)
            out["flood indexed after s"] = round(time.monotonic() - edited, 1)
            t2 = time.perf_counter()
            res = call(sock, "memory_search", {"query": "BIGMSG-1", "agent": "main"}, timeout=60)
            out["search of the flood ms"] = round((time.perf_counter() - t2) * 1000, 1)
            path = "sessions/main/s1.jsonl" if kind == "database" else "sessions/s1.jsonl"
            g = {"path": path, "from": 2, "lines": 1, "agent": "main"}  # BIGMSG-1
            got = call(sock, "memory_get", g, timeout=60)
            out["memory_get bytes"] = len(got["text"].encode())
            peak = max(peak, rss_kb(proc.pid))
        out["daemon peak RSS MB"] = round(peak / 1024, 1)
        return out
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mib", type=int, default=64, help="size of each flood (MiB)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        rows = [run_case(k, args.mib, Path(d)) for k in ("idle", "database", "jsonl")]
    keys = sorted({k for r in rows for k in r}, key=lambda k: (k != "case", k))
    print(" | ".join(keys))
    for r in rows:
        print(" | ".join(str(r.get(k, "-")) for k in keys))
    return 0


if __name__ == "__main__":
    sys.exit(main())
