"""Keyword-only retrieval quality on ../shared/eval (SciFact-dev, LoCoMo-dev).

Indexes each evaluation workspace with memindex itself and queries through the same
search path the CLI and daemon use (MemoryIndex.search).

    python bench/eval_keyword.py [--scifact] [--locomo] [--limit-queries N]
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


def scifact(tmp: Path, limit: int | None) -> dict[str, float]:
    root = shared("eval", "scifact-dev")
    cfg = Config(
        workspace=root, extraPaths=(ExtraPath(root / "docs"),), indexPath=tmp / "scifact.sqlite"
    )
    qrels: dict[str, set[str]] = defaultdict(set)
    for line in (root / "qrels_docs.tsv").read_text().splitlines():
        qid, _, doc, rel = line.split("\t")
        if int(rel) > 0:
            qrels[qid].add(doc)
    queries = [json.loads(x) for x in (root / "queries.jsonl").read_text().splitlines()]
    queries = [q for q in queries if q["qid"] in qrels][:limit]
    with MemoryIndex(cfg) as idx:
        t0 = time.perf_counter()
        rep = idx.sync()
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
    out = {
        "queries": len(queries),
        "ndcg@10": sum(nd) / len(nd),
        "recall@100": sum(r100) / len(r100),
        "index_s": round(t_index, 2),
        "chunks": rep.chunksWritten,
        "query_ms_mean": round(1000 * t_q / len(queries), 2),
    }
    return out


def locomo(tmp: Path, limit: int | None) -> dict[str, object]:
    root = shared("eval", "locomo-dev")
    queries = [json.loads(x) for x in (root / "queries.jsonl").read_text().splitlines()]
    queries = [q for q in queries if q["category"] in (1, 2, 3, 4)][:limit]
    by_conv: dict[str, list[dict[str, object]]] = defaultdict(list)
    for q in queries:
        by_conv[str(q["sample_id"])].append(q)
    stats: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for conv, qs in sorted(by_conv.items()):
        cfg = Config(workspace=root / conv, indexPath=tmp / f"{conv}.sqlite")
        with MemoryIndex(cfg) as idx:
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
    args = ap.parse_args()
    both = not (args.scifact or args.locomo)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        if args.scifact or both:
            r = scifact(tmp, args.limit_queries)
            print("SciFact-dev keyword-only:", json.dumps(r))
        if args.locomo or both:
            r2 = locomo(tmp, args.limit_queries)
            print("LoCoMo-dev keyword-only (memory files), per category:")
            for cat, m in r2.items():
                print(f"  cat {cat:>3}: {json.dumps(m)}")


if __name__ == "__main__":
    main()
