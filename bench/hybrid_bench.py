"""Hybrid query latency at 100k chunks, next to numpy brute force in the same run,
on SQLite and (``--stores sqlite,pgserver``) on PostgreSQL + pgvector.

Builds an index of N chunks (text from tldr-pages lines, so BM25 sees real English;
vectors random unit 384-d, since latency does not depend on their content) and
times memindex's hybrid search (keyword + vector + fusion + snippets) through the
in-memory matrix and keyword postings the daemon uses and through sqlite-vec and
FTS5 (what one-shot CLI calls use). Query embedding is excluded (a fixed query
vector). Baseline: numpy brute-force top-10 over the same matrix.

    python bench/hybrid_bench.py [--chunks 100000] [--queries 200]
        [--common-words] [--sessions-share 0.5] [--stores sqlite,pgserver]

On PostgreSQL the one-shot path's vectors come from the agent's HNSW index (built
once it has 20,000 vectors); ``pgserver`` keeps a server of the pgserver wheel in
bench/.cache/pgdata and makes a new database per run.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import percentile, pg_url, shared  # noqa: E402

from indexer.config import Config, StoreConfig  # noqa: E402
from indexer.engine import AgentIndex  # noqa: E402
from indexer.indexing.writer import CHANGES_KEPT  # noqa: E402
from indexer.sources.text import index_text  # noqa: E402
from indexer.store import ChunkRow, FileState  # noqa: E402
from indexer.store.backend import backend_for  # noqa: E402
from indexer.store.base import IndexStore  # noqa: E402
from providers.base import EmbeddingProvider, Vectors, normalize  # noqa: E402

DIMS = 384


class FixedQuery(EmbeddingProvider):
    """Returns a fixed random vector per query text (latency bench only)."""

    id = "bench"

    def __init__(self) -> None:
        super().__init__(model="random-384", dims=DIMS)
        self._seen: dict[tuple[str, ...], Vectors] = {}

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        # Memoised: the vector is made before the timed search (query embedding is
        # not what this bench measures), so the search only fetches it.
        key = tuple(texts)
        if key not in self._seen:
            rng = np.random.default_rng(abs(hash(key)) % 2**32)
            self._seen[key] = normalize(rng.standard_normal((len(texts), DIMS)))
        return self._seen[key]


def questions(n: int, rng: random.Random) -> list[str]:
    """``n`` queries of three words from real tldr sentences."""
    from index_bench import real_sentences

    sents = real_sentences()
    out: list[str] = []
    while len(out) < n:
        ws = [w.strip(".,()`'\"") for w in rng.choice(sents).lower().split()]
        ws = [w for w in ws if len(w) > 3 and w.isalpha()]
        if len(ws) >= 3:
            out.append(" ".join(rng.sample(ws, 3)))
    return out


def build(store: IndexStore, root: Path, n: int, sessions_share: float = 0.0) -> None:
    """``n`` chunks in 50-chunk files, then a vector for each (in id order)."""
    lines = []
    for page in sorted((shared("corpora", "tldr-pages") / "pages").rglob("*.md")):
        lines += [ln for ln in page.read_text(encoding="utf-8").splitlines() if len(ln) > 20]
    rng = random.Random(1)
    pick = random.Random(3)  # its own stream: the text is the same for every share
    prov = FixedQuery()
    vecs = normalize(np.random.default_rng(2).standard_normal((n, DIMS))).astype("<f4")
    with store.transaction():
        store.meta_set("workspace", str(root.resolve()))
        store.meta_set("vectorKey", prov.key())
        store.ensure_vector_table(DIMS)
    per_file = 50
    with store.batch() as commit:
        for f in range(n // per_file):
            rows = []
            for k in range(per_file):
                text = "\n".join(rng.choice(lines) for _ in range(8))
                rows.append(ChunkRow(k * 8 + 1, k * 8 + 8, "", f"h{f}-{k}", text, index_text(text)))
            source = "sessions" if pick.random() < sessions_share else "memory"
            name = f"sessions/s{f:05d}.jsonl" if source == "sessions" else f"memory/f{f:05d}.md"
            store.replace_file(name, source, FileState("x", 0, 0), per_file * 8, rows)
            if f % 20 == 19:
                commit()
        done, after = 0, 0
        while pending := store.pending_chunks(2000, after):
            store.put_vectors((i, vecs[done + j].tobytes()) for j, (i, _, _) in enumerate(pending))
            done += len(pending)
            after = pending[-1][0]
            commit()
    store.upkeep(CHANGES_KEPT)  # PostgreSQL: the agent's HNSW index (above 20,000 vectors)


def measure(
    cfg: Config, queries: list[str], label: str
) -> tuple[dict[str, float], npt.NDArray[np.float32]]:
    """(p50/p99 of hybrid search through the in-memory snapshot, p50 through the
    store's own vector search), and the snapshot's matrix."""
    from indexer.search.snapshot.live import LiveIndex

    prov = FixedQuery()
    live = LiveIndex()
    with AgentIndex(cfg, readonly=True, provider=prov, live=live) as idx:
        t0 = time.perf_counter()
        assert live.wait_ready(idx.store)
        snap = live.snapshot
        assert snap is not None and snap.vectors is not None
        print(
            f"{label}: read the snapshot ({len(snap.vectors)} x {DIMS} vectors and the "
            f"keyword postings) in {time.perf_counter() - t0:.2f}s"
        )
        mat = snap.vectors.segments[0].mat
        hyb: list[float] = []
        for q in queries[:20]:  # warm-up
            idx.search(q, max_results=10, min_score=0.0)
        for q in queries:
            t0 = time.perf_counter()
            r = idx.search(q, max_results=10, min_score=0.0)
            hyb.append(time.perf_counter() - t0)
            assert r["mode"] == "hybrid", r["fallback"]
    with AgentIndex(cfg, readonly=True, provider=prov) as idx:
        one: list[float] = []
        for q in queries[:50]:
            t0 = time.perf_counter()
            r = idx.search(q, max_results=10, min_score=0.0)
            one.append(time.perf_counter() - t0)
            assert r["mode"] == "hybrid", r["fallback"]
        extra = idx.store.versions()
    print(f"{label}: {extra}")
    return {
        "p50": statistics.median(hyb),
        "p99": percentile(hyb, 99),
        "one_p50": statistics.median(one),
        "one_p99": percentile(one, 99),
    }, mat


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--chunks", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--stores", default="sqlite", help="sqlite, pgserver or postgresql:// URLs")
    ap.add_argument(
        "--common-words",
        action="store_true",
        help="worst case: every query is 3 of the 10 most common words",
    )
    ap.add_argument(
        "--sessions-share",
        type=float,
        default=0.0,
        help="share of chunks from transcripts: with both sources, a search takes the "
        "best of each (as the daemon does for an agent with sessions)",
    )
    args = ap.parse_args()
    rng = random.Random(5)
    if args.common_words:
        words = [
            "list",
            "files",
            "archive",
            "compress",
            "network",
            "port",
            "process",
            "memory",
            "disk",
            "user",
        ]
        queries = [" ".join(rng.sample(words, 3)) for _ in range(args.queries)]
    else:
        queries = questions(args.queries, rng)
    stores = args.stores.split(",")
    got: dict[str, dict[str, float]] = {}
    brute: list[float] = []
    with tempfile.TemporaryDirectory() as d:
        ws = Path(d)
        for store in stores:
            if store == "sqlite":
                cfg = Config(workspace=ws, indexPath=ws / "h.sqlite")
            else:
                url = pg_url(store, f"hybrid_{int(time.time())}")
                cfg = Config(workspace=ws, agentId="hybrid", store=StoreConfig(url=url))
            label = "sqlite" if store == "sqlite" else "postgresql"
            backend = backend_for(cfg)
            t0 = time.perf_counter()
            with backend.open() as s:
                build(s, ws, args.chunks, args.sessions_share)
            print(f"{label}: built {args.chunks} chunks in {time.perf_counter() - t0:.0f}s")
            got[label], mat = measure(cfg, queries, label)
            if not brute:
                prov = FixedQuery()
                for q in queries:
                    v = prov.embed_query(q)[0]
                    t0 = time.perf_counter()
                    sims = mat @ v
                    top = np.argpartition(-sims, 10)[:10]
                    top[np.argsort(-sims[top])]
                    brute.append(time.perf_counter() - t0)
    ms = 1000
    b = statistics.median(brute)
    print(f"\n{args.chunks} chunks, {len(queries)} queries (hybrid: keyword + vector + fusion)")
    print(f"numpy brute-force top-10 (no keywords)      p50 {b * ms:7.2f} ms")
    for label, r in got.items():
        print(
            f"{label:<10} in-memory snapshot (daemon)    p50 {r['p50'] * ms:7.2f} ms  "
            f"p99 {r['p99'] * ms:7.2f} ms  = {r['p50'] / b:.2f}x brute force"
        )
        print(
            f"{label:<10} store's own vector search      p50 {r['one_p50'] * ms:7.2f} ms  "
            f"p99 {r['one_p99'] * ms:7.2f} ms  (one-shot path: sqlite-vec / pgvector)"
        )
    if "sqlite" in got and "postgresql" in got:
        a, p = got["sqlite"], got["postgresql"]
        print(
            f"postgresql / sqlite: in-memory p50 x{p['p50'] / a['p50']:.2f}, "
            f"one-shot p50 x{p['one_p50'] / a['one_p50']:.2f}"
        )


if __name__ == "__main__":
    main()
