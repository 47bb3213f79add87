"""Retrieval quality on ../shared/eval (SciFact-dev, LoCoMo-dev), keyword and hybrid.

Indexes each evaluation workspace with memindex itself and queries through the same
search path the CLI and daemon use (MemoryIndex.search). Hybrid mode uses the local
all-MiniLM-L6-v2 GGUF (scripts/build_test_model.py); built indexes are kept in
bench/.cache so a second run does not embed again.

    python bench/eval.py [--scifact] [--locomo] [--mode keyword|hybrid|both]
                         [--limit-queries N]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ndcg_at, recall_at, shared  # noqa: E402

from indexer.config import Config, ExtraPath  # noqa: E402
from indexer.engine import MemoryIndex  # noqa: E402
from indexer.vectors import VectorMatrix  # noqa: E402

CACHE = Path(__file__).resolve().parent / ".cache"
_PROVIDER = None


def provider():  # type: ignore[no-untyped-def]
    global _PROVIDER
    if _PROVIDER is None:
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
        from build_test_model import build

        from providers.local_gguf import LocalGGUFProvider

        _PROVIDER = LocalGGUFProvider(build())
    return _PROVIDER


def open_index(cfg: Config, mode: str) -> MemoryIndex:
    if mode == "hybrid":
        return MemoryIndex(cfg, provider=provider(), vectors=VectorMatrix())
    return MemoryIndex(cfg)


def scifact(tmp: Path, limit: int | None, mode: str) -> dict[str, float]:
    root = shared("eval", "scifact-dev")
    cfg = Config(
        workspace=root,
        extraPaths=(ExtraPath(root / "docs"),),
        indexPath=CACHE / f"scifact-{mode}.sqlite",
    )
    qrels: dict[str, set[str]] = defaultdict(set)
    for line in (root / "qrels_docs.tsv").read_text().splitlines():
        qid, _, doc, rel = line.split("\t")
        if int(rel) > 0:
            qrels[qid].add(doc)
    queries = [json.loads(x) for x in (root / "queries.jsonl").read_text().splitlines()]
    queries = [q for q in queries if q["qid"] in qrels][:limit]
    with open_index(cfg, mode) as idx:
        t0 = time.perf_counter()
        idx.sync()
        t_index = time.perf_counter() - t0
        nd, r100 = [], []
        t0 = time.perf_counter()
        for q in queries:
            res = idx.search(q["text"], max_results=200, min_score=0.0)["results"]
            ranked: list[str] = []
            for r in res:  # document score = its best chunk's
                if r["path"] not in ranked:
                    ranked.append(r["path"])
            nd.append(ndcg_at(ranked, qrels[q["qid"]], 10))
            r100.append(recall_at(ranked, qrels[q["qid"]], 100))
        t_q = time.perf_counter() - t0
        chunks = idx.store.counts().get("memory", {}).get("chunks", 0)
    out = {
        "queries": len(queries),
        "ndcg@10": sum(nd) / len(nd),
        "recall@100": sum(r100) / len(r100),
        "index_s": round(t_index, 2),
        "chunks": chunks,
        "query_ms_mean": round(1000 * t_q / len(queries), 2),
    }
    return out


def locomo(tmp: Path, limit: int | None, mode: str) -> dict[str, object]:
    root = shared("eval", "locomo-dev")
    queries = [json.loads(x) for x in (root / "queries.jsonl").read_text().splitlines()]
    queries = [q for q in queries if q["category"] in (1, 2, 3, 4)][:limit]
    by_conv: dict[str, list[dict[str, object]]] = defaultdict(list)
    for q in queries:
        by_conv[str(q["sample_id"])].append(q)
    stats: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for conv, qs in sorted(by_conv.items()):
        cfg = Config(workspace=root / conv, indexPath=CACHE / f"locomo-{conv}-{mode}.sqlite")
        with open_index(cfg, mode) as idx:
            idx.sync()
            for q in qs:
                gold = [
                    (g["path"].split("/", 1)[1], g["start_line"], g["end_line"])
                    for g in q["relevant_md"]
                ]  # type: ignore[index]
                res = idx.search(q["question"], max_results=10, min_score=0.0)["results"]
                hits = []
                for r in res:
                    hit = any(
                        p == r["path"] and r["startLine"] <= e and s <= r["endLine"]
                        for p, s, e in gold
                    )
                    hits.append(hit)
                covered5 = {
                    g
                    for g in gold
                    for r in res[:5]
                    if g[0] == r["path"] and r["startLine"] <= g[2] and g[1] <= r["endLine"]
                }
                covered10 = {
                    g
                    for g in gold
                    for r in res[:10]
                    if g[0] == r["path"] and r["startLine"] <= g[2] and g[1] <= r["endLine"]
                }
                rr = next((1.0 / (i + 1) for i, h in enumerate(hits) if h), 0.0)
                for cat in (str(q["category"]), "all"):
                    stats[cat]["r5"].append(len(covered5) / len(gold) if gold else 0.0)
                    stats[cat]["r10"].append(len(covered10) / len(gold) if gold else 0.0)
                    stats[cat]["mrr10"].append(rr)
    return {
        cat: {k: round(sum(v) / len(v), 4) for k, v in m.items()} | {"n": len(m["r5"])}
        for cat, m in sorted(stats.items())
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--scifact", action="store_true")
    ap.add_argument("--locomo", action="store_true")
    ap.add_argument("--limit-queries", type=int, default=None)
    ap.add_argument("--mode", choices=["keyword", "hybrid", "both"], default="both")
    args = ap.parse_args()
    both = not (args.scifact or args.locomo)
    modes = ["keyword", "hybrid"] if args.mode == "both" else [args.mode]
    CACHE.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for mode in modes:
            if args.scifact or both:
                r = scifact(tmp, args.limit_queries, mode)
                print(f"SciFact-dev {mode}:", json.dumps(r), flush=True)
            if args.locomo or both:
                r2 = locomo(tmp, args.limit_queries, mode)
                print(f"LoCoMo-dev {mode} (memory files), per category:")
                for cat, m in r2.items():
                    print(f"  cat {cat:>3}: {json.dumps(m)}", flush=True)


if __name__ == "__main__":
    main()
