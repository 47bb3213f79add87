"""A large index, the way the daemon lives with it: build, size, the daemon's memory,
hybrid search through the socket, and edit-to-searchable while idle and while a
writer works.

1. A workspace of Markdown files whose sections make about ``--chunks`` chunks
   (real English sentences from tldr-pages; ``--chunk-tokens`` per chunk, 64 by
   default so a million chunks are 250 MB of text rather than 1.6 GB).
2. Build: ``memindex index`` with no provider (the keyword index, timed), then a
   random unit 384-d vector per chunk written through the store under the local
   MiniLM model's provider key (timed apart: embedding a million chunks on two
   cores would take a day; search latency does not depend on the vectors' values).
3. The daemon (``memindex serve``, the local model for query vectors) on that index:
   seconds until its in-memory snapshot is loaded, RSS after loading.
4. ``--queries`` hybrid searches of three real words through the Unix socket, one
   client: p50 / p99; the same through ``AgentIndex`` in this process on the same
   file (the one-shot CLI path: FTS5 and sqlite-vec) as the baseline.
5. Edit-to-searchable: a new fact appended to a daily log, polled until a search
   returns it; idle, then while a writer appends to other logs every 50 ms.

Index size is the SQLite file (and its WAL). Targets (issue #38): hybrid p50 <= 50
ms at 1,000,000 chunks, RSS <= 2 GB.

    python bench/scale_bench.py [--chunks 1000000] [--chunk-tokens 64] [--queries 200]
                                [--edits 5] [--keep DIR]
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
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import REPO, local_model, percentile  # noqa: E402
from daemon_bench import Client, rss_kb  # noqa: E402
from hybrid_bench import questions  # noqa: E402
from index_bench import real_sentences  # noqa: E402

from indexer.config.file import load_config  # noqa: E402
from indexer.store.backend import backend_for  # noqa: E402
from providers.base import normalize  # noqa: E402

DIMS = 384
SECTIONS_PER_FILE = 200
CHUNKS_PER_SECTION = 0.68  # measured at 64 tokens: short sections share a chunk


def make_workspace(ws: Path, chunks: int, sentences: list[str], seed: int = 5) -> int:
    """Daily logs of ``SECTIONS_PER_FILE`` short sections, as many as make about
    ``chunks`` chunks at 64 tokens; the number of files."""
    rng = random.Random(seed)
    mem = ws / "memory"
    mem.mkdir(parents=True, exist_ok=True)
    files = max(1, round(chunks / CHUNKS_PER_SECTION / SECTIONS_PER_FILE))
    for f in range(files):
        parts = []
        for s in range(SECTIONS_PER_FILE):
            body = "\n".join(f"- {rng.choice(sentences)}" for _ in range(2))
            parts.append(f"## Entry {f}-{s}\n{body}\n")
        (mem / f"day-{f:06d}.md").write_text("\n".join(parts), encoding="utf-8")
    return files


def write_config(root: Path, ws: Path, tokens: int, model: Path | None) -> Path:
    text = (
        f'workspace = "{ws}"\nindexPath = "{root / "index.sqlite"}"\n'
        f"[chunking]\ntokens = {tokens}\noverlap = {max(1, tokens // 8)}\n"
        f'[server]\nsocket = "{root / "d.sock"}"\n'
    )
    if model is None:
        text += '[provider]\nname = "none"\n'
    else:
        text += f'[provider]\nname = "local"\n[provider.local]\nmodelPath = "{model}"\n'
    path = root / ("config.toml" if model else "config-keyword.toml")
    path.write_text(text, encoding="utf-8")
    return path


def memindex(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "indexer.surfaces.cli", "--config", str(config), *args],
        capture_output=True,
        text=True,
        check=True,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
    )


def write_vectors(config: Path, model: Path) -> tuple[int, float]:
    """A random unit vector for every chunk, under the local model's provider key."""
    from providers.local_gguf import LocalGGUFProvider

    prov = LocalGGUFProvider(model)
    key, name = prov.key(), f"{prov.id}:{prov.model}:{prov.dims}"
    prov.close()
    cfg = load_config(config)
    backend = backend_for(cfg)
    store = backend.open()
    rng = np.random.default_rng(2)
    t0 = time.perf_counter()
    n = 0
    try:
        with store.transaction():
            store.meta_set("vectorKey", key)
            store.meta_set("vectorModel", name)
            store.ensure_vector_table(DIMS)
        after = 0
        with store.batch() as commit:
            while pending := store.pending_chunks(5000, after):
                vecs = normalize(rng.standard_normal((len(pending), DIMS))).astype("<f4")
                store.put_vectors((i, vecs[j].tobytes()) for j, (i, _, _) in enumerate(pending))
                n += len(pending)
                after = pending[-1][0]
                commit()
    finally:
        store.close()
    return n, time.perf_counter() - t0


class Daemon:
    """``memindex serve`` on ``cfg``, its output in ``root``/daemon.log; returns once
    its socket ``root``/d.sock exists."""

    def __init__(self, cfg: Path, root: Path) -> None:
        self.log = (root / "daemon.log").open("w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "indexer.surfaces.cli", "--config", str(cfg), "serve"],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env=dict(os.environ, PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1"),
        )
        while not (root / "d.sock").exists():
            if self.proc.poll() is not None:
                self.stop()
                raise SystemExit(f"the daemon exited: see {root / 'daemon.log'}")
            time.sleep(0.1)

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


def search(c: Client, query: str, agent: str | None = None) -> list[dict[str, object]]:
    params: dict[str, object] = {"query": query, "maxResults": 10}
    if agent is not None:
        params["agent"] = agent
    reply = c.call("memory_search", params)
    if "error" in reply:
        raise RuntimeError(reply["error"])
    result = reply["result"]
    assert isinstance(result, dict)
    if result.get("mode") != "hybrid":
        raise RuntimeError(f"not hybrid: {result.get('fallback')}")
    return result["results"]  # type: ignore[no-any-return]


def in_memory(st: object) -> bool:
    """``status`` says the daemon answers from its loaded snapshot: current, with
    the keyword postings and (when the index has vectors) the vectors."""
    if not isinstance(st, dict) or st.get("busy") or st.get("dirty"):
        return False
    mem = st.get("memory") or {}
    vectors = bool(st.get("vector", {}).get("enabled"))
    return (
        mem.get("state") == "current"
        and mem.get("keywordRows") is not None
        and (mem.get("vectorRows") is not None or not vectors)
    )


def edit_to_searchable(
    sock: Path, ws: Path, edits: int, label: str, agent: str | None = None
) -> list[float]:
    out = []
    scope: dict[str, object] = {} if agent is None else {"agent": agent}
    c = Client(sock)
    try:
        for k in range(edits):
            token = f"SCALE{label.upper()}{k}Q{random.randint(10**5, 10**6)}"
            path = ws / "memory" / f"day-{k:06d}.md"
            t0 = time.perf_counter()
            with path.open("a", encoding="utf-8") as fh:
                fh.write(f"\n## Fact {token}\n- Remember {token}.\n")
            while True:
                hits = c.call("memory_search", {"query": token, "maxResults": 3, **scope})
                res = hits.get("result") or {}
                if any(token in str(r.get("snippet", "")) for r in res.get("results", [])):
                    break
                if time.perf_counter() - t0 > 120:
                    raise SystemExit(f"{token} not searchable after 120 s")
                time.sleep(0.02)
            out.append(time.perf_counter() - t0)
    finally:
        c.close()
    return out


def main() -> None:  # noqa: PLR0915 - one straight run
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--chunks", type=int, default=1_000_000)
    ap.add_argument("--chunk-tokens", type=int, default=64)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--edits", type=int, default=5)
    ap.add_argument("--keep", type=Path, default=None, help="build here and keep it (reused)")
    ap.add_argument(
        "--agents",
        type=int,
        default=1,
        help="with --store: this many agents of --chunks/agents chunks each in one "
        "PostgreSQL database, served by one daemon",
    )
    ap.add_argument("--store", default="", help="pgserver or a postgresql:// URL (--agents)")
    args = ap.parse_args()
    if args.store:
        return fleet(args)

    sentences = real_sentences()
    model = local_model("minilm")
    tmp = None if args.keep else tempfile.TemporaryDirectory()
    root = args.keep or Path(tmp.name)  # type: ignore[union-attr]
    root.mkdir(parents=True, exist_ok=True)
    ws = root / "ws"
    out: dict[str, object] = {"chunksAsked": args.chunks, "chunkTokens": args.chunk_tokens}
    keyword_cfg = write_config(root, ws, args.chunk_tokens, None)
    cfg = write_config(root, ws, args.chunk_tokens, model)
    if not (root / "index.sqlite").exists():
        t0 = time.perf_counter()
        out["files"] = make_workspace(ws, args.chunks, sentences)
        out["workspaceS"] = round(time.perf_counter() - t0, 1)
        t0 = time.perf_counter()
        memindex(keyword_cfg, "index")
        out["keywordBuildS"] = round(time.perf_counter() - t0, 1)
        n, secs = write_vectors(cfg, model)
        out["vectorsWritten"], out["vectorWriteS"] = n, round(secs, 1)
    status = json.loads(memindex(cfg, "status", "--json").stdout)
    out["chunks"] = sum(int(c["chunks"]) for c in status["sources"].values())
    index = Path(status["indexPath"]).resolve()
    out["indexMB"] = round(
        sum(p.stat().st_size for p in index.parent.glob(index.name + "*")) / 1e6, 1
    )
    qs = questions(args.queries, random.Random(9))

    # the baseline: the one-shot path on the same file (FTS5 + sqlite-vec)
    from indexer.engine import AgentIndex
    from indexer.selection import select_provider

    one_cfg = load_config(cfg)
    sel = select_provider(one_cfg)
    with AgentIndex(one_cfg, readonly=True, provider=sel.provider) as idx:
        idx.search(qs[0])
        lat = []
        for q in qs[: max(20, args.queries // 4)]:
            t = time.perf_counter()
            idx.search(q)
            lat.append(time.perf_counter() - t)
    if sel.provider is not None:
        sel.provider.close()
    out["oneShotP50Ms"] = round(statistics.median(lat) * 1000, 1)

    sock = root / "d.sock"
    t0 = time.perf_counter()
    daemon = Daemon(cfg, root)
    try:
        c = Client(sock)
        # ready: status says the snapshot is loaded and current (a search starts it)
        while not in_memory(c.call("status", {}).get("result")):
            if time.perf_counter() - t0 > 1800:
                raise SystemExit("the daemon's snapshot not loaded after 30 minutes")
            search(c, qs[0])
            time.sleep(1.0)
        out["daemonReadyS"] = round(time.perf_counter() - t0, 1)
        for q in qs[:20]:
            search(c, q)
        lat = []
        for q in qs:
            t = time.perf_counter()
            search(c, q)
            lat.append(time.perf_counter() - t)
        out["socketP50Ms"] = round(percentile(lat, 50) * 1000, 1)
        out["socketP99Ms"] = round(percentile(lat, 99) * 1000, 1)
        out["rssMB"] = round(rss_kb(daemon.proc.pid) / 1024)
        out["rssAnonMB"] = round(rss_kb(daemon.proc.pid, "RssAnon") / 1024)
        c.close()
        idle = edit_to_searchable(sock, ws, args.edits, "idle")
        out["editIdleP50S"] = round(statistics.median(idle), 2)
        stop = threading.Event()

        def writer() -> None:
            r, n = random.Random(4), 0
            while not stop.is_set():
                day = ws / "memory" / f"day-{r.randint(100, 400):06d}.md"
                with day.open("a", encoding="utf-8") as fh:
                    fh.write(f"\n## Writer {n}\n- {r.choice(sentences)}\n")
                n += 1
                time.sleep(0.05)

        th = threading.Thread(target=writer, daemon=True)
        th.start()
        try:
            busy = edit_to_searchable(sock, ws, args.edits, "busy")
        finally:
            stop.set()
            th.join()
        out["editWritingP50S"] = round(statistics.median(busy), 2)
        out["rssAfterMB"] = round(rss_kb(daemon.proc.pid) / 1024)
    finally:
        daemon.stop()
        if tmp is not None:
            tmp.cleanup()
    print(json.dumps(out))
    print(
        f"\n{out['chunks']:,} chunks ({args.chunk_tokens} tokens each), index "
        f"{out['indexMB']} MB; daemon ready in {out['daemonReadyS']} s, RSS {out['rssMB']} MB "
        f"(anonymous {out['rssAnonMB']} MB)\n"
        f"hybrid through the socket: p50 {out['socketP50Ms']} ms, p99 {out['socketP99Ms']} ms "
        f"(one-shot path on the same file: p50 {out['oneShotP50Ms']} ms)\n"
        f"edit-to-searchable p50: idle {out['editIdleP50S']} s, "
        f"while writing {out['editWritingP50S']} s"
    )
    if "keywordBuildS" in out:
        print(
            f"build: keyword index {out['keywordBuildS']} s, "
            f"{out['vectorsWritten']:,} vectors written in {out['vectorWriteS']} s"
        )


FLEET_CONNECTIONS = 600  # the bench's own server: every agent holds two and searches more


def fleet_server(root: Path) -> str:
    """A PostgreSQL of the pgserver wheel in ``root`` allowing FLEET_CONNECTIONS: a
    daemon holds two connections per agent (its writer's and its writer lock's)
    besides its searches', past PostgreSQL's default of 100 at 50 agents."""
    import pgserver  # type: ignore[import-untyped]

    srv = pgserver.get_server(root, cleanup_mode="stop")
    srv.psql(f"ALTER SYSTEM SET max_connections = {FLEET_CONNECTIONS};")
    srv.cleanup()  # stops it: the setting takes effect at the next start
    srv = pgserver.get_server(root, cleanup_mode=None)
    got = srv.psql("SHOW max_connections;")
    assert str(FLEET_CONNECTIONS) in got, got
    srv.psql("CREATE DATABASE scale;")
    return str(srv.get_uri("scale"))


def fleet_server_stop(root: Path) -> None:
    import pgserver

    pgserver.get_server(root, cleanup_mode="stop").cleanup()


def fleet(args: argparse.Namespace) -> None:
    """``--agents`` agents in one PostgreSQL database, one daemon serving them all:
    build (keyword index per agent, two at a time; random vectors), the daemon's
    readiness and RSS, hybrid searches through the socket at random agents (p50 and
    p99 over all, the slowest agent's p50), edit-to-searchable on one agent."""
    from concurrent.futures import ThreadPoolExecutor

    sentences = real_sentences()
    model = local_model("minilm")
    tmp = None if args.keep else tempfile.TemporaryDirectory()
    root = args.keep or Path(tmp.name)  # type: ignore[union-attr]
    root.mkdir(parents=True, exist_ok=True)
    n, per = args.agents, args.chunks // args.agents
    names = [f"agent{a:03d}" for a in range(n)]
    out: dict[str, object] = {"agents": n, "chunksPerAgentAsked": per}
    url = args.store if args.store != "pgserver" else ""
    made = (root / "built").exists()
    if not url and not made:
        url = fleet_server(root / "pg")
    elif not url:  # a kept build: its server again (stopped when the machine was)
        import pgserver

        pgserver.get_server(root / "pg", cleanup_mode=None)
        url = (root / "url").read_text()
    (root / "url").write_text(url)
    chunking = (
        f"[chunking]\ntokens = {args.chunk_tokens}\noverlap = {max(1, args.chunk_tokens // 8)}\n"
    )
    store = f'[store]\nurl = "{url}"\npoolSize = 4\n'
    local = f'[provider]\nname = "local"\n[provider.local]\nmodelPath = "{model}"\n'

    def agent_config(a: int, vectors: bool) -> Path:
        text = (
            f'workspace = "{root / names[a] / "ws"}"\nagentId = "{names[a]}"\n'
            f'stateDir = "{root / "state"}"\n{chunking}{store}'
            + (local if vectors else '[provider]\nname = "none"\n')
        )
        path = root / names[a] / ("config.toml" if vectors else "config-keyword.toml")
        path.write_text(text, encoding="utf-8")
        return path

    if not made:
        t0 = time.perf_counter()
        for a in range(n):
            make_workspace(root / names[a] / "ws", per, sentences, seed=a)
        out["workspaceS"] = round(time.perf_counter() - t0, 1)
        t0 = time.perf_counter()
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(lambda a: memindex(agent_config(a, False), "index"), range(n)))
        out["keywordBuildS"] = round(time.perf_counter() - t0, 1)
        t0 = time.perf_counter()
        out["vectorsWritten"] = sum(
            write_vectors(agent_config(a, True), model)[0] for a in range(n)
        )
        out["vectorWriteS"] = round(time.perf_counter() - t0, 1)
        (root / "built").write_text("yes")
    agents = "".join(
        f'[[agents]]\nid = "{name}"\nworkspace = "{root / name / "ws"}"\n' for name in names
    )
    cfg = root / "daemon.toml"
    cfg.write_text(
        f'stateDir = "{root / "state"}"\n{chunking}{store}{local}'
        f'[server]\nsocket = "{root / "d.sock"}"\n{agents}',
        encoding="utf-8",
    )
    st = json.loads(memindex(agent_config(0, True), "status", "--json").stdout)
    out["chunksAgent0"] = sum(int(c["chunks"]) for c in st["sources"].values())
    qs = questions(args.queries, random.Random(9))
    sock = root / "d.sock"
    t0 = time.perf_counter()
    daemon = Daemon(cfg, root)
    try:
        c = Client(sock)
        ready: set[str] = set()
        while len(ready) < n:  # every agent idle, its snapshot loaded and current
            for name in names:
                if name in ready:
                    continue
                if in_memory(c.call("status", {"agent": name}).get("result")):
                    ready.add(name)
                else:
                    search(c, qs[0], name)  # starts loading the snapshot
            if time.perf_counter() - t0 > 3600:
                raise SystemExit(f"not ready after an hour: {n - len(ready)} agents")
            time.sleep(0.5)
        out["daemonReadyS"] = round(time.perf_counter() - t0, 1)
        rng = random.Random(12)
        for q in qs[:50]:
            search(c, q, rng.choice(names))
        by_agent: dict[str, list[float]] = {}
        lat = []
        for q in qs:
            name = rng.choice(names)
            t = time.perf_counter()
            search(c, q, name)
            lat.append(time.perf_counter() - t)
            by_agent.setdefault(name, []).append(lat[-1])
        out["socketP50Ms"] = round(percentile(lat, 50) * 1000, 1)
        out["socketP99Ms"] = round(percentile(lat, 99) * 1000, 1)
        out["slowestAgentP50Ms"] = round(
            max(statistics.median(v) for v in by_agent.values()) * 1000, 1
        )
        out["rssMB"] = round(rss_kb(daemon.proc.pid) / 1024)
        out["rssAnonMB"] = round(rss_kb(daemon.proc.pid, "RssAnon") / 1024)
        c.close()
        idle = edit_to_searchable(sock, root / names[0] / "ws", args.edits, "idle", names[0])
        out["editIdleP50S"] = round(statistics.median(idle), 2)
    finally:
        daemon.stop()
        if tmp is not None:
            if not args.store.startswith("postgres"):
                fleet_server_stop(root / "pg")
            tmp.cleanup()
    print(json.dumps(out))
    print(
        f"\n{n} agents x {out['chunksAgent0']:,} chunks on PostgreSQL, one daemon: ready in "
        f"{out['daemonReadyS']} s, RSS {out['rssMB']} MB (anonymous {out['rssAnonMB']} MB)\n"
        f"hybrid through the socket, a random agent each: p50 {out['socketP50Ms']} ms, "
        f"p99 {out['socketP99Ms']} ms; the slowest agent's p50 {out['slowestAgentP50Ms']} ms\n"
        f"edit-to-searchable p50 (idle): {out['editIdleP50S']} s"
    )
    if "keywordBuildS" in out:
        print(
            f"build: keyword index {out['keywordBuildS']} s (two agents at a time), "
            f"{out['vectorsWritten']:,} vectors written in {out['vectorWriteS']} s"
        )


if __name__ == "__main__":
    main()
