"""Daemon latency: edit-to-searchable, socket query latency, idle RSS.

Runs the real daemon (``memindex serve``) in a subprocess on a generated workspace of
500 daily logs plus a sessions folder, and measures over its Unix socket:

* edit-to-searchable: a new fact written to memory/today.md, polled until a search
  returns it (target: debounce + 100 ms at p50);
* socket query latency, 1 client, and 50 concurrent clients while a writer edits
  memory files and appends to a transcript (errors must be 0);
* RSS and open fds of the daemon before and after the load (and after every round
  of a soak), with a bound on their growth (fds +8, anonymous RSS +128 MiB: the
  index files are read through mmap, so their cached pages count in VmRSS), PASS
  or FAIL.

Baseline in the same run: the same queries through AgentIndex.search in this
process (no socket, no JSON), i.e. the floor the socket adds to.

    python bench/daemon_bench.py [--edits 15] [--clients 50] [--queries 200]
                                 [--soak-minutes 30]

The reliability load run (docs/RELIABILITY.md): ``--clients 50 --queries 1000``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import percentile  # noqa: E402
from index_bench import WORDS, make_daily_logs, real_sentences  # noqa: E402

from indexer.config import Config  # noqa: E402
from indexer.engine import AgentIndex  # noqa: E402


class Client:
    def __init__(self, path: Path) -> None:
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.connect(str(path))
        self.f = self.s.makefile("rb")
        self.n = 0

    def call(self, method: str, params: dict[str, object]) -> dict[str, object]:
        self.n += 1
        req = {"jsonrpc": "2.0", "id": self.n, "method": method, "params": params}
        self.s.sendall(json.dumps(req).encode() + b"\n")
        return json.loads(self.f.readline())  # type: ignore[no-any-return]

    def close(self) -> None:
        self.f.close()
        self.s.close()


def rss_kb(pid: int, field: str = "VmRSS") -> int:
    """Resident KiB; ``RssAnon``: private memory only. The index files are read
    through mmap, so VmRSS also counts their pages (file cache, not a leak):
    growth is judged on RssAnon."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return -1


def anon_kb(pid: int) -> int:
    return rss_kb(pid, "RssAnon")


def fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--edits", type=int, default=15)
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--soak-minutes", type=float, default=0.0, help="repeat the load for this long")
    ap.add_argument(
        "--tiny-vocabulary",
        action="store_true",
        help="worst case: logs from a 47-word vocabulary, every chunk matches",
    )
    args = ap.parse_args()
    rng = random.Random(3)
    sentences = None if args.tiny_vocabulary else real_sentences()
    if sentences:  # questions made of words from sentences the logs use
        words = [w for s in rng.sample(sentences, 400) for w in s.lower().split() if w.isalpha()]
    else:
        words = WORDS
    queries = [" ".join(rng.sample(words, 3)) for _ in range(200)] + [
        f"KESTREL-{rng.randint(1, 9999):04d}" for _ in range(50)
    ]

    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        ws = tmp / "ws"
        make_daily_logs(ws, 500, sentences=sentences)
        sessions = tmp / "sessions"
        sessions.mkdir()
        conf = tmp / "config.toml"
        conf.write_text(
            f'workspace = "{ws}"\nagentId = "bench"\nstateDir = "{tmp / "state"}"\n'
            f'[sessions]\ndir = "{sessions}"\n'
        )
        sock = tmp / "mi.sock"
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "indexer.surfaces.cli",
                "--config",
                str(conf),
                "serve",
                "--socket",
                str(sock),
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            while True:
                try:
                    c = Client(sock)
                    st = c.call("status", {})["result"]
                    if st["lastSync"] and not st["dirty"]:  # type: ignore[index]
                        break
                    c.close()
                except (OSError, KeyError, TypeError):
                    pass
                time.sleep(0.05)
            files = st["files"]  # type: ignore[index]
            time.sleep(1.0)
            rss0, anon0, fd0 = rss_kb(proc.pid), anon_kb(proc.pid), fds(proc.pid)

            # Baseline: the same search in-process.
            cfg = Config(workspace=ws, agentId="bench", stateDir=tmp / "state")
            base = []
            with AgentIndex(cfg, readonly=True) as idx:
                for q in queries:
                    t0 = time.perf_counter()
                    idx.search(q)
                    base.append(time.perf_counter() - t0)

            one = []
            for q in queries * 2:
                t0 = time.perf_counter()
                r = c.call("memory_search", {"query": q})
                one.append(time.perf_counter() - t0)
                assert "result" in r, r

            # Edit-to-searchable.
            lat = []
            today = ws / "memory" / "today.md"
            for i in range(args.edits):
                token = f"FACT-{i:03d}-{rng.randint(10**6, 10**7)}"
                with today.open("a") as fh:
                    fh.write(f"- new fact {token}\n")
                t0 = time.perf_counter()
                while True:
                    res = c.call("memory_search", {"query": token})["result"]
                    if res["results"]:  # type: ignore[index]
                        lat.append(time.perf_counter() - t0)
                        break
                    if time.perf_counter() - t0 > 30:
                        raise SystemExit(f"{token} never became searchable")
                    time.sleep(0.005)
                time.sleep(0.3)

            # 50 clients while files change.
            stop = threading.Event()

            def writer() -> None:
                n = 0
                tr = sessions / "bench.jsonl"
                while not stop.is_set():
                    p = ws / "memory" / f"day-{rng.randint(0, 499):04d}.md"
                    with p.open("a") as fh:
                        fh.write(f"- writer line {n} {rng.choice(WORDS)}\n")
                    with tr.open("a") as fh:
                        fh.write(
                            json.dumps(
                                {
                                    "type": "message",
                                    "role": "user",
                                    "content": f"transcript line {n}",
                                }
                            )
                            + "\n"
                        )
                    n += 1
                    time.sleep(0.05)

            errors = 0
            lats: list[float] = []
            lock = threading.Lock()

            def client_run(k: int) -> None:
                nonlocal errors
                cl = Client(sock)
                local = []
                bad = 0
                r2 = random.Random(k)
                for _ in range(args.queries):
                    q = r2.choice(queries)
                    t0 = time.perf_counter()
                    try:
                        rep = cl.call("memory_search", {"query": q})
                        if "result" not in rep:
                            bad += 1
                    except (OSError, ValueError):
                        bad += 1
                    local.append(time.perf_counter() - t0)
                cl.close()
                with lock:
                    lats.extend(local)
                    errors += bad

            def clients_round(seed: int) -> None:
                """``args.clients`` clients at once, each with its own query stream."""
                threads = [
                    threading.Thread(target=client_run, args=(seed + k,))
                    for k in range(args.clients)
                ]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()

            # Warm-up: the reader pool and caches fill; growth is judged from here.
            clients_round(0)
            lats.clear()
            time.sleep(1.0)
            rss_w, anon_w, fd_w = rss_kb(proc.pid), anon_kb(proc.pid), fds(proc.pid)
            wt = threading.Thread(target=writer)
            wt.start()
            t_all = time.perf_counter()
            soak_end = time.monotonic() + args.soak_minutes * 60
            rounds = 0
            while True:
                clients_round(rounds * 1000)
                rounds += 1
                if time.monotonic() >= soak_end:
                    break
                print(
                    f"soak round {rounds}: {len(lats)} queries, errors {errors}, "
                    f"RSS {rss_kb(proc.pid) / 1024:.1f} MiB "
                    f"(anon {anon_kb(proc.pid) / 1024:.1f}), fds {fds(proc.pid)}",
                    flush=True,
                )
            wall = time.perf_counter() - t_all
            stop.set()
            wt.join()
            time.sleep(2.0)
            rss1, anon1, fd1 = rss_kb(proc.pid), anon_kb(proc.pid), fds(proc.pid)
            c.close()
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)

    ms = 1000.0
    kind = "tiny vocabulary (worst case)" if args.tiny_vocabulary else "real sentences"
    print(f"workspace: {files} files (500 daily logs of {kind} + MEMORY.md), debounce 1500 ms")
    print(
        f"baseline in-process search   p50 {statistics.median(base) * ms:6.2f} ms  "
        f"p99 {percentile(base, 99) * ms:6.2f} ms"
    )
    print(
        f"socket, 1 client             p50 {statistics.median(one) * ms:6.2f} ms  "
        f"p99 {percentile(one, 99) * ms:6.2f} ms  ({len(one)} queries)"
    )
    print(
        f"socket, {args.clients} clients x {args.queries} while files change: "
        f"p50 {statistics.median(lats) * ms:6.2f} ms  p99 {percentile(lats, 99) * ms:6.2f} ms  "
        f"errors {errors}  ({len(lats) / wall:.0f} queries/s)"
    )
    print(
        f"edit-to-searchable           p50 {statistics.median(lat) * ms:6.0f} ms  "
        f"p95 {percentile(lat, 95) * ms:6.0f} ms  (target p50 <= 1600 ms)"
    )
    print(
        f"daemon RSS idle {rss0 / 1024:.1f} MiB -> warmed up {rss_w / 1024:.1f} MiB -> after "
        f"load {rss1 / 1024:.1f} MiB (anonymous {anon0 / 1024:.1f} -> {anon_w / 1024:.1f} -> "
        f"{anon1 / 1024:.1f}); open fds {fd0} -> {fd_w} -> {fd1}"
    )
    ok = errors == 0 and fd1 <= fd_w + 8 and anon1 - anon_w <= 128 * 1024
    print(
        f"{'PASS' if ok else 'FAIL'}: {rounds} round(s), {len(lats)} queries, errors {errors} "
        f"(must be 0), fd growth after warm-up {fd1 - fd_w} (bound 8), anonymous RSS growth "
        f"{(anon1 - anon_w) / 1024:.1f} MiB (bound 128)"
    )
    if not ok:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
