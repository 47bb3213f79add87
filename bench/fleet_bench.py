"""A team's fleet: several daemons (one per host) writing into one store while many
clients search through their sockets, on SQLite and on PostgreSQL in the same run.

Each of ``--daemons`` daemons (its own state folder and socket, as on its own host)
serves one agent whose memory is two folders of ``--logs`` daily logs each (the
workspace and an extra path) plus a transcript that keeps growing. Every agent's
memory holds the same "shared" sentence with its own secret in it, and probe facts
only it has.

1. Ingest: all daemons start together on an empty store; the time until every one
   has indexed everything, as files and chunks per second.
2. Load: ``--clients`` clients spread over the sockets search for ``--seconds``
   while a writer per agent appends to its daily logs and transcript and adds new
   probe facts; errors (JSON-RPC errors, dropped connections) must be 0.
3. Probes: every probe fact (written before the start and during the load) is found
   through its own agent's socket, and the shared sentence through each socket
   returns that agent's secret only (never another agent's rows).

SQLite: each daemon writes its own file. PostgreSQL: all write one database
(``--store pgserver`` keeps a server of the pgserver wheel in bench/.cache/pgdata
and uses a new database each run, or give a postgresql:// URL of an empty database).
Keyword search (no embedding provider: no keys, no network).

    python bench/fleet_bench.py [--stores sqlite,pgserver] [--daemons 4] [--logs 500]
                                [--clients 20] [--seconds 30]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import REPO, percentile, pg_url  # noqa: E402
from daemon_bench import Client  # noqa: E402
from index_bench import make_daily_logs, real_sentences  # noqa: E402


@dataclass
class Host:
    agent: str
    root: Path
    sock: Path
    proc: subprocess.Popen[bytes] | None = None
    log: Any = None  # the daemon's stderr (daemon.log in its folder)
    probes: list[str] = field(default_factory=list)
    secret: str = ""

    @property
    def ws(self) -> Path:
        return self.root / "ws"

    @property
    def transcript(self) -> Path:
        return self.root / "sessions" / "main.jsonl"


def setup(tmp: Path, n: int, logs: int, url: str, sentences: list[str]) -> list[Host]:
    hosts = []
    for i in range(n):
        h = Host(f"agent{i}", tmp / f"host{i}", tmp / f"host{i}" / "mi.sock")
        make_daily_logs(h.ws, logs, seed=10 + i, sentences=sentences)
        make_daily_logs(h.root / "notes", logs, seed=100 + i, sentences=sentences)
        h.secret = f"SECRET{i}X{random.Random(i).randint(10**5, 10**6)}"
        with (h.ws / "MEMORY.md").open("a") as fh:
            fh.write(f"- The shared harbor gate code is {h.secret}.\n")
        for k in range(5):
            probe = f"PROBE{i}Q{k}Z{random.Random(i * 100 + k).randint(10**5, 10**6)}"
            folder = h.ws / "memory" if k % 2 else h.root / "notes" / "memory"
            with (folder / f"probe-{k}.md").open("w") as fh:
                fh.write(f"# Probe {k}\n\n- Remember {probe} for later.\n")
            h.probes.append(probe)
        h.transcript.parent.mkdir(parents=True)
        h.transcript.write_text("")
        store = f'[store]\nurl = "{url}"\n' if url else ""
        (h.root / "config.toml").write_text(
            f'workspace = "{h.ws}"\nagentId = "{h.agent}"\nstateDir = "{h.root / "state"}"\n'
            f'extraPaths = ["{h.root / "notes"}"]\n'
            f'[sessions]\ndir = "{h.transcript.parent}"\ndeltaMessages = 5\nidleFlushMs = 500\n'
            f"{store}"
        )
        hosts.append(h)
    return hosts


def start(h: Host) -> None:
    env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONPATH=str(REPO))
    env.pop("MEMINDEX_DATABASE_URL", None)
    h.log = (h.root / "daemon.log").open("wb")  # noqa: SIM115 (closed in run's finally)
    h.proc = subprocess.Popen(
        [sys.executable, "-m", "indexer.surfaces.cli", "--config", str(h.root / "config.toml"),
         "serve", "--socket", str(h.sock)],
        env=env, stdout=subprocess.DEVNULL, stderr=h.log,
    )  # fmt: skip


def idle_status(h: Host) -> dict[str, object] | None:
    """The daemon's status once it has synced everything it knows of, else None."""
    try:
        c = Client(h.sock)
        try:
            st = c.call("status", {})["result"]
        finally:
            c.close()
    except (OSError, KeyError, ValueError):
        return None
    assert isinstance(st, dict)
    return st if st.get("lastSync") and not st.get("dirty") else None


def search(c: Client, query: str) -> list[dict[str, object]]:
    rep = c.call("memory_search", {"query": query, "minScore": 0})
    if "result" not in rep:
        raise RuntimeError(f"error reply: {rep.get('error')}")
    return list(rep["result"]["results"])  # type: ignore[index,call-overload]


def run(store: str, args: argparse.Namespace, sentences: list[str]) -> dict[str, object]:
    rng = random.Random(5)
    words = [w for s in rng.sample(sentences, 400) for w in s.lower().split() if w.isalpha()]
    queries = [" ".join(rng.sample(words, 3)) for _ in range(300)]
    url = "" if store == "sqlite" else pg_url(store, f"fleet_{int(time.time())}")
    with tempfile.TemporaryDirectory() as d:
        hosts = setup(Path(d), args.daemons, args.logs, url, sentences)
        t0 = time.perf_counter()
        for h in hosts:
            start(h)
        try:
            statuses: dict[str, dict[str, object]] = {}
            while len(statuses) < len(hosts):
                for h in hosts:
                    if h.agent not in statuses and (st := idle_status(h)) is not None:
                        statuses[h.agent] = st
                assert all(h.proc and h.proc.poll() is None for h in hosts), "a daemon died"
                if time.perf_counter() - t0 > 1800:
                    raise SystemExit("ingest did not finish in 30 minutes")
                time.sleep(0.1)
            ingest = time.perf_counter() - t0
            files = sum(int(st["files"]) for st in statuses.values())  # type: ignore[call-overload]
            chunks = sum(int(st["chunks"]) for st in statuses.values())  # type: ignore[call-overload]

            stop = threading.Event()
            lats: list[float] = []
            errors: list[str] = []
            lock = threading.Lock()

            def writer(h: Host, seed: int) -> None:
                r, n = random.Random(seed), 0
                while not stop.is_set():
                    day = h.ws / "memory" / f"day-{r.randint(0, args.logs - 1):04d}.md"
                    with day.open("a") as fh:
                        fh.write(f"- writer line {n}: {r.choice(sentences)}\n")
                    with h.transcript.open("a") as fh:
                        msg = {"type": "message", "role": "user", "content": r.choice(sentences)}
                        fh.write(json.dumps(msg) + "\n")
                    if n % 40 == 0:  # a new probe fact every ~2 s
                        probe = f"LIVE{h.agent}N{n}K{r.randint(10**5, 10**6)}"
                        with (h.ws / "memory" / f"live-{n}.md").open("w") as fh:
                            fh.write(f"# Live {n}\n\n- Remember {probe}.\n")
                        with lock:
                            h.probes.append(probe)
                    n += 1
                    time.sleep(0.05)

            def client(k: int) -> None:
                h = hosts[k % len(hosts)]
                r = random.Random(1000 + k)
                local: list[float] = []
                bad: list[str] = []
                try:
                    c = Client(h.sock)
                except OSError as exc:
                    bad.append(f"connect: {exc}")
                else:
                    while not stop.is_set():
                        q = r.choice(queries)
                        t = time.perf_counter()
                        try:
                            search(c, q)
                        except (OSError, ValueError, RuntimeError) as exc:
                            bad.append(f"{h.agent}: {exc}")
                            c.close()
                            c = Client(h.sock)
                        local.append(time.perf_counter() - t)
                    c.close()
                with lock:
                    lats.extend(local)
                    errors.extend(bad)

            threads = [threading.Thread(target=writer, args=(h, i)) for i, h in enumerate(hosts)]
            threads += [threading.Thread(target=client, args=(k,)) for k in range(args.clients)]
            t_load = time.perf_counter()
            for t in threads:
                t.start()
            time.sleep(args.seconds)
            stop.set()
            for t in threads:
                t.join()
            wall = time.perf_counter() - t_load

            # Probes: each found through its own socket once the daemons catch up.
            t_catch = time.perf_counter()
            missing: list[str] = []
            leaks: list[str] = []
            for h in hosts:
                c = Client(h.sock)
                for probe in h.probes:
                    deadline = time.monotonic() + 60
                    while not any(probe in str(x["snippet"]) for x in search(c, probe)):
                        if time.monotonic() > deadline:
                            missing.append(f"{h.agent}: {probe}")
                            break
                        time.sleep(0.1)
                shared = " ".join(str(x["snippet"]) for x in search(c, "shared harbor gate code"))
                if h.secret not in shared:
                    missing.append(f"{h.agent}: its own secret")
                leaks += [f"{h.agent} sees {o.agent}'s secret" for o in hosts
                          if o is not h and o.secret in shared]  # fmt: skip
                for o in hosts:  # another agent's probe is never found here
                    if o is not h and any(o.probes[0] in str(x["snippet"])
                                          for x in search(c, o.probes[0])):  # fmt: skip
                        leaks.append(f"{h.agent} finds {o.agent}'s probe")
                c.close()
            catch_up = time.perf_counter() - t_catch
            probes = sum(len(h.probes) for h in hosts)
        finally:
            for h in hosts:
                if h.proc and h.proc.poll() is None:
                    h.proc.send_signal(signal.SIGTERM)
            for h in hosts:
                if h.proc:
                    try:
                        h.proc.wait(timeout=30)
                    except subprocess.TimeoutExpired:
                        h.proc.kill()
                if h.log:
                    h.log.close()
    return {
        "store": "sqlite" if store == "sqlite" else "postgresql",
        "daemons": len(hosts),
        "ingest_s": round(ingest, 2),
        "files": files,
        "chunks": chunks,
        "files_per_s": round(files / ingest, 1),
        "chunks_per_s": round(chunks / ingest, 1),
        "queries": len(lats),
        "qps": round(len(lats) / wall, 1),
        "p50_ms": round(statistics.median(lats) * 1000, 2) if lats else None,
        "p99_ms": round(percentile(lats, 99) * 1000, 2) if lats else None,
        "errors": len(errors),
        "error_samples": errors[:5],
        "probes": probes,
        "missing": missing,
        "leaks": leaks,
        "probe_check_s": round(catch_up, 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--stores", default="sqlite,pgserver", help="sqlite, pgserver or URLs")
    ap.add_argument("--daemons", type=int, default=4)
    ap.add_argument("--logs", type=int, default=500, help="daily logs per folder (2 per agent)")
    ap.add_argument("--clients", type=int, default=20)
    ap.add_argument("--seconds", type=float, default=30.0, help="length of the search load")
    args = ap.parse_args()
    sentences = real_sentences()
    results = []
    for store in args.stores.split(","):
        r = run(store, args, sentences)
        print(json.dumps(r), flush=True)
        results.append(r)
    print()
    print(
        f"{args.daemons} daemons x 2 folders of {args.logs} daily logs + a growing transcript; "
        f"{args.clients} clients for {args.seconds:.0f} s"
    )
    print("| store | ingest s | files/s | chunks/s | queries/s | p50 ms | p99 ms | errors "
          "| probes found | leaks |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        found = f"{r['probes'] - len(r['missing'])}/{r['probes']}"  # type: ignore[operator,arg-type]
        print(
            f"| {r['store']} | {r['ingest_s']} | {r['files_per_s']} | {r['chunks_per_s']} "
            f"| {r['qps']} | {r['p50_ms']} | {r['p99_ms']} | {r['errors']} | {found} "
            f"| {len(r['leaks'])} |"  # type: ignore[arg-type]
        )
    if len(results) == 2:
        a, b = results
        print(
            f"{b['store']} / {a['store']}: ingest time x{b['ingest_s'] / a['ingest_s']:.2f}, "  # type: ignore[operator]
            f"p50 x{b['p50_ms'] / a['p50_ms']:.2f}, p99 x{b['p99_ms'] / a['p99_ms']:.2f}"  # type: ignore[operator]
        )
    bad = [r for r in results if r["errors"] or r["missing"] or r["leaks"]]
    for r in bad:
        print(f"FAIL {r['store']}: {r['error_samples']} {r['missing'][:5]} {r['leaks'][:5]}")  # type: ignore[index]
    if bad:
        raise SystemExit(1)
    print("PASS: 0 errors, every probe found through its own agent's socket only")


if __name__ == "__main__":
    main()
