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
   client: p50 / p99; the same through ``MemoryIndex`` in this process on the same
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

from indexer.config_file import load_config  # noqa: E402
from indexer.store.backend import backend_for  # noqa: E402
from providers.base import normalize  # noqa: E402

DIMS = 384
SECTIONS_PER_FILE = 200
CHUNKS_PER_SECTION = 0.68  # measured at 64 tokens: short sections share a chunk


def make_workspace(ws: Path, chunks: int, sentences: list[str]) -> int:
    """Daily logs of ``SECTIONS_PER_FILE`` short sections, as many as make about
    ``chunks`` chunks at 64 tokens; the number of files."""
    rng = random.Random(5)
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


def search(c: Client, query: str) -> list[dict[str, object]]:
    reply = c.call("memory_search", {"query": query, "maxResults": 10})
    if "error" in reply:
        raise RuntimeError(reply["error"])
    result = reply["result"]
    assert isinstance(result, dict)
    if result.get("mode") != "hybrid":
        raise RuntimeError(f"not hybrid: {result.get('fallback')}")
    return result["results"]  # type: ignore[no-any-return]


def edit_to_searchable(sock: Path, ws: Path, edits: int, label: str) -> list[float]:
    out = []
    c = Client(sock)
    try:
        for k in range(edits):
            token = f"SCALE{label.upper()}{k}Q{random.randint(10**5, 10**6)}"
            path = ws / "memory" / f"day-{k:06d}.md"
            t0 = time.perf_counter()
            with path.open("a", encoding="utf-8") as fh:
                fh.write(f"\n## Fact {token}\n- Remember {token}.\n")
            while True:
                hits = c.call("memory_search", {"query": token, "maxResults": 3})
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--chunks", type=int, default=1_000_000)
    ap.add_argument("--chunk-tokens", type=int, default=64)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--edits", type=int, default=5)
    ap.add_argument("--keep", type=Path, default=None, help="build here and keep it (reused)")
    args = ap.parse_args()

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
    from indexer.engine import MemoryIndex
    from indexer.selection import select_provider

    one_cfg = load_config(cfg)
    sel = select_provider(one_cfg)
    with MemoryIndex(one_cfg, readonly=True, provider=sel.provider) as idx:
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
    log = (root / "daemon.log").open("w")
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "indexer.surfaces.cli", "--config", str(cfg), "serve"],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=dict(os.environ, PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1"),
    )
    try:
        while not sock.exists():
            if proc.poll() is not None:
                raise SystemExit(f"the daemon exited: see {root / 'daemon.log'}")
            time.sleep(0.1)
        c = Client(sock)
        # ready: a search answered from the in-memory snapshot (its timing drops)
        while True:
            st = c.call("status", {})["result"]
            assert isinstance(st, dict)
            if not st.get("busy") and not st.get("dirty"):
                t = time.perf_counter()
                search(c, qs[0])
                if time.perf_counter() - t < 0.5 or time.perf_counter() - t0 > 1800:
                    break
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
        out["rssMB"] = round(rss_kb(proc.pid) / 1024)
        out["rssAnonMB"] = round(rss_kb(proc.pid, "RssAnon") / 1024)
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
        out["rssAfterMB"] = round(rss_kb(proc.pid) / 1024)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
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


if __name__ == "__main__":
    main()
