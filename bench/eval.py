"""Retrieval quality on ../shared/eval: memindex next to the anchors' query logic.

Indexes each evaluation workspace with memindex itself (SciFact-dev docs; each
LoCoMo-dev conversation's daily logs *and* session transcripts) and scores:

* ``memindex``: the search path the CLI and daemon use (AgentIndex.search), with
  the product defaults (maxResults as asked, minScore 0.35);
* ``openclaw`` and ``qmd``: the anchors' query logic over the same index
  (bench/anchors.py);

each keyword-only and hybrid (local all-MiniLM-L6-v2 GGUF from
scripts/build_test_model.py, or with ``--model e5-small`` multilingual-e5-small from
scripts/build_e5_model.py, its indexes in bench/.cache/e5-small; QMD's hybrid needs
its own LLMs and is not run).
``--store sqlite,pgserver`` (or a postgresql:// URL) runs memindex on PostgreSQL as
well, beside SQLite in the same run: the PostgreSQL rows are labelled ``memindex@pg``
(the anchors read SQLite's FTS5 and run on SQLite only); ``pgserver`` keeps a server
of the pgserver wheel in bench/.cache/pgdata.
LoCoMo is scored per category (1-4 and all) with memory files only, transcripts
only and both. Built indexes are kept in bench/.cache; query vectors are embedded
once per run and shared by the configurations.

Writes bench/results/eval-<time>.json and .md (the tables) and prints the tables.

    python bench/eval.py [--data scifact,locomo] [--mode keyword|hybrid|both]
                         [--configs memindex,openclaw,qmd]
                         [--sources memory,sessions,both] [--limit-queries N]
                         [--store sqlite,pgserver|postgresql://...]
                         [--model minilm|e5-small]
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from anchors import Result, openclaw_search, qmd_search  # noqa: E402
from common import LOCAL_MODELS, local_model, ndcg_at, pg_url, recall_at, shared  # noqa: E402

from indexer.config import (  # noqa: E402
    Config,
    ExtraPath,
    HybridConfig,
    QueryConfig,
    RerankConfig,
    SessionsConfig,
    StoreConfig,
)
from indexer.engine import AgentIndex  # noqa: E402
from indexer.search.snapshot import vector_memory  # noqa: E402
from indexer.search.snapshot.live import LiveIndex  # noqa: E402
from providers.local_gguf import WINDOW_MODES  # noqa: E402

CACHE = Path(__file__).resolve().parent / ".cache"
RESULTS = Path(__file__).resolve().parent / "results"
_PROVIDER: Any = None
SOURCES = {"memory": ["memory"], "sessions": ["sessions"], "both": None}
HYBRID = HybridConfig()  # --fusion / --vector-weight change memindex's
RERANK = RerankConfig()  # --rerank turns memindex's rerank stage on
QUERY = QueryConfig(abstainBelow=0.0)  # every search reports its relevance, none abstains
DUMP: Any = None  # --dump: a file of per-question figures
CROSS = 6  # LoCoMo: a question asked of another conversation's workspace
LAST: dict[str, Any] = {}  # the last memindex search's relevance; rerank fallbacks
MODEL = "minilm"  # --model: the local embedding model of hybrid runs
QUANTIZE_AT = vector_memory.QUANTIZE_AT  # --quantize-at: vectors from which they are quantized
WINDOWS = "segments"  # --windows: how line windows are mixed in (WINDOW_MODES), or off
STORES = ["sqlite"]  # --store: "sqlite" and/or PostgreSQL URLs

# One result: the ranges it cites (memindex cites the same memory in both sources
# as one result; the anchors cite one range).
Hit = tuple[Result, ...]
Searcher = Callable[[AgentIndex, str, int, "list[str] | None", float | None], list[Hit]]


def provider() -> Any:
    """The local model (``MODEL``); query vectors memoised for this run (every
    configuration asks for the same questions)."""
    global _PROVIDER
    if _PROVIDER is None:
        from providers.local_gguf import LocalGGUFProvider

        _PROVIDER = LocalGGUFProvider(local_model(MODEL))
        _PROVIDER.line_windows = WINDOWS != "off"
        _PROVIDER.window_pooling = WINDOWS if WINDOWS != "off" else WINDOW_MODES[0]
        _PROVIDER.embed_query = functools.lru_cache(maxsize=None)(_PROVIDER.embed_query)
    return _PROVIDER


def open_index(cfg: Config, mode: str) -> AgentIndex:
    if mode == "hybrid":
        return AgentIndex(cfg, provider=provider(), live=LiveIndex(quantize_at=QUANTIZE_AT))
    return AgentIndex(cfg)


def searcher(config: str, mode: str) -> Searcher:
    def memindex(
        idx: AgentIndex, q: str, k: int, src: list[str] | None, floor: float | None
    ) -> list[Hit]:
        res = idx.search(
            q,
            max_results=k,
            min_score=floor,
            sources=src,
            abstain=True,
            as_of=LAST.get("asOf"),
            time_zone="UTC",
        )
        assert res["mode"] == mode, res.get("fallback")
        LAST["relevance"] = res.get("relevance")
        if res.get("fallback"):  # the rerank stage's
            LAST["fallbacks"] = LAST.get("fallbacks", 0) + 1
        # What the agent reads: the snippets' line ranges (a citation's whole chunk
        # is one memory_get away; an ``also`` citation has no snippet of its own).
        LAST["snippets"] = [
            ((r["path"], r["snippetStartLine"], r["snippetEndLine"]),) for r in res["results"]
        ]
        return [
            tuple((c["path"], c["startLine"], c["endLine"]) for c in [r, *r.get("also", [])])
            for r in res["results"]
        ]

    def openclaw(
        idx: AgentIndex, q: str, k: int, src: list[str] | None, floor: float | None
    ) -> list[Hit]:
        return [
            (r,) for r in openclaw_search(idx, q, limit=k, sources=src, hybrid=mode == "hybrid")
        ]

    def qmd(
        idx: AgentIndex, q: str, k: int, src: list[str] | None, floor: float | None
    ) -> list[Hit]:
        return [(r,) for r in qmd_search(idx, q, limit=k, sources=src)]

    return {"memindex": memindex, "openclaw": openclaw, "qmd": qmd}[config]


def runs(configs: Sequence[str], modes: Sequence[str]) -> list[tuple[str, str]]:
    return [(c, m) for m in modes for c in configs if not (c == "qmd" and m == "hybrid")]


def stores(configs: Sequence[str]) -> list[tuple[str, list[str]]]:
    """(store, the configurations run on it): the anchors on SQLite only."""
    out = []
    for store in STORES:
        on = [c for c in configs if store == "sqlite" or c == "memindex"]
        if on:
            out.append((store, on))
    return out


def label(config: str, store: str) -> str:
    return config if store == "sqlite" else f"{config}@pg"


def with_store(cfg: Config, store: str, agent: str) -> Config:
    """``cfg`` on ``store``: SQLite at its indexPath, or PostgreSQL as agent ``agent``.

    On PostgreSQL the index is built by memindex's own writer, but the shared
    embedding cache is first given the vectors the SQLite run's cache holds (same
    model, same chunk hashes): a second pass of the local model over SciFact takes
    an hour here and would give the same vectors."""
    if store == "sqlite":
        return cfg
    out = replace(cfg, agentId=agent, store=StoreConfig(url=store))
    if cfg.indexPath is not None and Path(cfg.indexPath).exists():
        from indexer.indexing.transfer import copy_cache
        from indexer.store.backend import backend_for
        from indexer.store.sqlite.store import Store

        with (
            Store(Path(cfg.indexPath), readonly=True) as src,
            backend_for(out).open() as dst,
            dst.batch() as commit,
        ):
            copy_cache(src, dst, commit)
    return out


def scifact(
    configs: Sequence[str], modes: Sequence[str], limit: int | None
) -> list[dict[str, Any]]:
    root = shared("eval", "scifact-dev")
    qrels: dict[str, set[str]] = defaultdict(set)
    for line in (root / "qrels_docs.tsv").read_text().splitlines():
        qid, _, doc, rel = line.split("\t")
        if int(rel) > 0:
            qrels[qid].add(doc)
    queries = [json.loads(x) for x in (root / "queries.jsonl").read_text().splitlines()]
    queries = [q for q in queries if q["qid"] in qrels][:limit]
    out = []
    for (store, on), mode in ((s, m) for s in stores(configs) for m in modes):
        cfg = Config(
            workspace=root,
            extraPaths=(ExtraPath(root / "docs"),),
            indexPath=CACHE / f"scifact-{mode}.sqlite",
            hybrid=HYBRID,
            rerank=RERANK,
            query=QUERY,
        )
        with open_index(with_store(cfg, store, f"scifact-{mode}"), mode) as idx:
            t0 = time.perf_counter()
            idx.sync()
            t_index = time.perf_counter() - t0
            for config, m in runs(on, [mode]):
                search = searcher(config, m)
                nd, r100 = [], []
                t0 = time.perf_counter()
                for q in queries:
                    # Document level: a document ranks at its best chunk. 200 chunks
                    # and no floor, so recall@100 sees a full document list.
                    floor = 0.0 if config == "memindex" else None
                    ranked: list[str] = []
                    for hit in search(idx, q["text"], 200, None, floor):
                        path = hit[0][0]
                        if path not in ranked:
                            ranked.append(path)
                    nd.append(ndcg_at(ranked, qrels[q["qid"]], 10))
                    r100.append(recall_at(ranked, qrels[q["qid"]], 100))
                out.append(
                    {
                        "config": label(config, store),
                        "mode": mode,
                        "queries": len(queries),
                        "ndcg@10": round(sum(nd) / len(nd), 4),
                        "recall@100": round(sum(r100) / len(r100), 4),
                        "query_ms_mean": round(1000 * (time.perf_counter() - t0) / len(queries), 2),
                        "index_s": round(t_index, 2),
                    }
                )
                print("SciFact-dev", json.dumps(out[-1]), flush=True)
    return out


def _overlaps(hit: Hit, gold: tuple[str, int, int]) -> bool:
    return any(r[0] == gold[0] and r[1] <= gold[2] and gold[1] <= r[2] for r in hit)


def locomo(
    configs: Sequence[str], modes: Sequence[str], sources: Sequence[str], limit: int | None
) -> list[dict[str, Any]]:
    root = shared("eval", "locomo-dev")
    queries = [json.loads(x) for x in (root / "queries.jsonl").read_text().splitlines()]
    # Category 5 (unanswerable) is asked only for the abstention figures.
    queries = [q for q in queries if q["category"] in (1, 2, 3, 4, 5)][:limit]
    by_conv: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for q in queries:
        by_conv[str(q["sample_id"])].append(q)
    # stats[(config, mode, source)][category][metric] -> values
    stats: dict[tuple[str, str, str], dict[str, dict[str, list[float]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list))
    )
    # signals[(config, mode, source)] -> (category, relevance, recall@10) per query
    signals: dict[tuple[str, str, str], list[tuple[int, float, float]]] = defaultdict(list)
    convs = sorted(by_conv)
    # Each conversation's questions of categories 1-4 asked of the next conversation's
    # workspace as well: their answers are not there (category 6 here, "cross").
    cross = {
        c: [q | {"category": CROSS} for q in by_conv[convs[(i + 1) % len(convs)]]
            if q["category"] != 5]
        for i, c in enumerate(convs)
    } if len(convs) > 1 else {}  # fmt: skip
    for conv, qs in sorted(by_conv.items()):
        qs = qs + cross.get(conv, [])
        # The questions are asked the day after the conversation's last session (what
        # "last year" and "in May" mean), as an agent asks right after it.
        logs = sorted(p.name[:10] for p in (root / conv / "memory").glob("????-??-??*.md"))
        LAST["asOf"] = f"{logs[-1]}T23:59:00+00:00" if logs else None
        for (store, on), mode in ((s, m) for s in stores(configs) for m in modes):
            cfg = Config(
                workspace=root / conv,
                indexPath=CACHE / f"locomo-{conv}-{mode}.sqlite",
                sessions=SessionsConfig(dir=str(root / conv / "sessions")),
                hybrid=HYBRID,
                rerank=RERANK,
                query=QUERY,
            )
            with open_index(with_store(cfg, store, f"locomo-{conv}-{mode}"), mode) as idx:
                idx.sync()
                for config, m in runs(on, [mode]):
                    search = searcher(config, m)
                    for source in sources:
                        for q in qs:
                            if q["category"] in (5, CROSS) and config != "memindex":
                                continue
                            gold = {} if q["category"] == CROSS else _gold(q, source)
                            LAST.pop("relevance", None)
                            LAST.pop("snippets", None)
                            res = search(idx, q["question"], 10, SOURCES[source], None)
                            key = (label(config, store), mode, source)
                            if LAST.get("relevance") is not None:
                                signals[key].append(
                                    (q["category"], LAST["relevance"], _recall(gold, res, 10))
                                )
                            if q["category"] not in (5, CROSS):
                                _score(stats[key], q, gold, res, LAST.get("snippets"))
                            if DUMP is not None:
                                row = {"key": key, "q": q["question"], "cat": q["category"]}
                                every = [g for ranges in gold.values() for g in ranges]
                                first = next(
                                    (i + 1 for i, r in enumerate(res[:10])
                                     if any(_overlaps(r, g) for g in every)),
                                    None,
                                )  # fmt: skip
                                row |= {"r10": _recall(gold, res, 10), "rank": first}
                                DUMP.write(json.dumps(row))
                                DUMP.write("\n")
    out = []
    for (config, mode, source), cats in sorted(stats.items()):
        out.append(
            {
                "config": config,
                "mode": mode,
                "sources": source,
                "categories": {
                    cat: {k: round(sum(v) / len(v), 4) for k, v in ms.items()}
                    | {"n": len(ms["r10"])}
                    for cat, ms in sorted(cats.items())
                },
            }
            | abstention(signals.get((config, mode, source), []))
            | abstention(signals.get((config, mode, source), []), CROSS, "abstentionCross")
        )
        print("LoCoMo-dev", json.dumps(out[-1]), flush=True)
    return out


def _gold(q: dict[str, Any], source: str) -> dict[str, list[tuple[str, int, int]]]:
    """Evidence id -> its gold line ranges in the searched source(s)."""
    gold: dict[str, list[tuple[str, int, int]]] = defaultdict(list)
    if source in ("memory", "both"):
        for g in q["relevant_md"]:
            gold[g["dia_id"]].append((g["path"].split("/", 1)[1], g["start_line"], g["end_line"]))
    if source in ("sessions", "both"):
        for g in q["relevant_jsonl"]:
            gold[g["dia_id"]].append((g["path"].split("/", 1)[1], g["line"], g["line"]))
    return gold


def _recall(gold: dict[str, list[tuple[str, int, int]]], res: list[Hit], k: int) -> float:
    if not gold:
        return 0.0
    found = sum(
        1 for ranges in gold.values() if any(_overlaps(r, g) for r in res[:k] for g in ranges)
    )
    return found / len(gold)


def abstention(
    rows: list[tuple[int, float, float]], unanswerable: int = 5, name: str = "abstention"
) -> dict[str, Any]:
    """How well the relevance signal tells the ``unanswerable`` category (5: LoCoMo's
    speaker swaps, whose topic is in the workspace; CROSS: another conversation's
    questions) from 1-4: its AUC (the chance an answerable query scores above an
    unanswerable one) and, per threshold, the share of unanswerable queries that
    abstain against the share of the answerable queries' recall@10 still returned."""
    pos = [s for c, s, _ in rows if c not in (5, CROSS)]
    neg = [s for c, s, _ in rows if c == unanswerable]
    if not pos or not neg:
        return {}
    wins = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p in pos for n in neg)
    base = sum(r for c, _, r in rows if c not in (5, CROSS)) or 1.0
    curve = []
    for t in [x / 20 for x in range(21)]:
        kept = sum(r for c, s, r in rows if c not in (5, CROSS) and s >= t)
        curve.append(
            {
                "below": t,
                "unanswerableAbstain": round(sum(1 for n in neg if n < t) / len(neg), 4),
                "answerableAbstain": round(sum(1 for p in pos if p < t) / len(pos), 4),
                "recallKept": round(kept / base, 4),
            }
        )
    return {name: {"auc": round(wins / (len(pos) * len(neg)), 4), "curve": curve}}


def _score(
    acc: dict[str, dict[str, list[float]]],
    q: dict[str, Any],
    gold: dict[str, list[tuple[str, int, int]]],
    res: list[Hit],
    snippets: list[Hit] | None = None,
) -> None:
    """Evidence recall@5/@10 (an evidence turn is found when any result overlaps one
    of its gold ranges), MRR@10 (first result overlapping any gold range) and, given
    the results' snippet ranges, recall@10 of the snippets (``r10snippet``)."""
    if not gold:
        return
    every = [g for ranges in gold.values() for g in ranges]
    rr = next(
        (1.0 / (i + 1) for i, r in enumerate(res[:10]) if any(_overlaps(r, g) for g in every)), 0.0
    )
    for cat in (str(q["category"]), "all"):
        acc[cat]["r5"].append(_recall(gold, res, 5))
        acc[cat]["r10"].append(_recall(gold, res, 10))
        acc[cat]["mrr10"].append(rr)
        if snippets is not None:
            acc[cat]["r10snippet"].append(_recall(gold, snippets, 10))


def markdown(sf: list[dict[str, Any]], lc: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    h = meta["hybrid"]
    lines = [
        f"Run {meta['date']}, `{meta['command']}`, {meta['seconds']:.0f} s; memindex hybrid "
        f"fusion {h['fusion']}, vector weight {h['vectorWeight']} "
        f"(weak keyword hits: {h.get('vectorWeightWeak')}), local model "
        f"{meta.get('model', 'minilm')}, line windows {meta.get('windows', 'passes')}.",
        "",
    ]
    if sf:
        lines += [
            "SciFact-dev (document level)",
            "",
            "| config | mode | nDCG@10 | recall@100 | ms/query |",
            "|---|---|---|---|---|",
        ]
        lines += [
            f"| {r['config']} | {r['mode']} | {r['ndcg@10']:.3f} | {r['recall@100']:.3f} "
            f"| {r['query_ms_mean']:.1f} |"
            for r in sf
        ]
        lines.append("")
    if lc:
        lines += [
            "LoCoMo-dev evidence recall@10 per category (1 multi-hop, 2 temporal, "
            "3 open-domain, 4 single-hop), recall@5 and MRR@10 over all; the last column "
            "counts only the lines the results' snippets show",
            "",
            "| config | mode | sources | cat 1 | cat 2 | cat 3 | cat 4 | all R@10 | all R@5 "
            "| all MRR@10 | all R@10, snippets |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        order = {"memindex": 0, "memindex@pg": 1, "openclaw": 2, "qmd": 3}
        for r in sorted(
            lc,
            key=lambda r: (r["sources"] != "memory", r["sources"], r["mode"], order[r["config"]]),
        ):
            c = r["categories"]
            cells = " | ".join(f"{c[k]['r10']:.3f}" if k in c else "-" for k in "1234")
            snip = c["all"].get("r10snippet")
            lines.append(
                f"| {r['config']} | {r['mode']} | {r['sources']} | {cells} "
                f"| {c['all']['r10']:.3f} | {c['all']['r5']:.3f} | {c['all']['mrr10']:.3f} "
                f"| {'-' if snip is None else f'{snip:.3f}'} |"
            )
        marks = (0.3, 0.4, 0.5, 0.6)
        header = (
            "| mode | sources | AUC | "
            + " | ".join(f"below {t:g}: unanswerable / answerable / recall kept" for t in marks)
            + " |"
        )
        rule = "---|" * len(marks)
        with_signal = [r for r in lc if "abstention" in r]
        if with_signal:
            lines += [
                "",
                "Abstention on LoCoMo-dev: AUC of the relevance signal, category 5 "
                "(unanswerable) against 1-4; at each `abstainBelow`, the share of "
                "unanswerable / answerable queries that abstain and the recall@10 kept",
                "",
                header,
                "|---|---|---|" + rule,
            ]
            for key, what in (
                ("abstention", "category 5 (a speaker swap: its topic is in the workspace)"),
                ("abstentionCross", "cross (categories 1-4 asked of another conversation)"),
            ):
                if key != "abstention":  # the first table's header is above
                    lines += ["", f"Unanswerable: {what}", "", header, "|---|---|---|" + rule]
                for r in with_signal:
                    if key not in r:
                        continue
                    a = r[key]
                    at = {p["below"]: p for p in a["curve"]}
                    cells = " | ".join(
                        f"{at[t]['unanswerableAbstain']:.2f} / {at[t]['answerableAbstain']:.2f}"
                        f" / {at[t]['recallKept']:.2f}"
                        for t in marks
                    )
                    lines.append(f"| {r['mode']} | {r['sources']} | {a['auc']:.3f} | {cells} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    global HYBRID, RERANK, MODEL, CACHE, WINDOWS, QUANTIZE_AT, QUERY, DUMP
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--data", default="scifact,locomo")
    ap.add_argument("--mode", choices=["keyword", "hybrid", "both"], default="both")
    ap.add_argument("--configs", default="memindex,openclaw,qmd")
    ap.add_argument("--sources", default="memory,sessions,both")
    ap.add_argument("--limit-queries", type=int, default=None)
    ap.add_argument("--fusion", choices=["weighted", "rrf"], default=HYBRID.fusion)
    ap.add_argument("--vector-weight", type=float, default=HYBRID.vectorWeight)
    ap.add_argument(
        "--vector-weight-weak",
        type=float,
        default=HYBRID.vectorWeightWeak,
        help="hybrid.vectorWeightWeak (= --vector-weight: one fixed weight)",
    )
    ap.add_argument("--store", default="sqlite", help="sqlite, pgserver or postgresql:// URLs")
    ap.add_argument(
        "--rerank",
        default="",
        help="memindex's rerank stage: local:<file.gguf>, http:<baseUrl>, voyage",
    )
    ap.add_argument("--rerank-blend", choices=["rank", "fixed"], default="rank")
    ap.add_argument("--rerank-candidates", type=int, default=RerankConfig.candidates)
    ap.add_argument(
        "--model",
        choices=LOCAL_MODELS,
        default=MODEL,
        help="local embedding model: all-MiniLM-L6-v2 (the test model) or multilingual-e5-small",
    )
    ap.add_argument(
        "--windows",
        choices=[*WINDOW_MODES, "off"],
        default=WINDOWS,
        help="how the local model mixes line windows into a chunk's vector: runs of lines "
        "as sequences of their own in one pass (shipped), or the windows embedded as extra "
        "texts (before); or none",
    )
    ap.add_argument(
        "--quantize-at",
        type=int,
        default=QUANTIZE_AT,
        help="vectors from which the in-memory snapshot keeps them quantized (sign bits and "
        "int8); 0 measures the quantized search on the small dev sets",
    )
    ap.add_argument(
        "--date-boost",
        type=float,
        default=QUERY.dateBoost,
        help="query.dateBoost; 0 reads no time words (the engine before time-aware search)",
    )
    ap.add_argument("--dump", default="", help="a JSON line per LoCoMo question to this file")
    args = ap.parse_args()
    QUERY = QueryConfig(abstainBelow=0.0, dateBoost=args.date_boost)
    DUMP = open(args.dump, "w") if args.dump else None  # noqa: SIM115 (open for the run)
    QUANTIZE_AT = args.quantize_at
    MODEL = args.model
    WINDOWS = args.windows
    if MODEL != "minilm":
        CACHE = CACHE / MODEL  # its own indexes: the minilm ones stay usable
    if args.rerank:
        kind, _, where = args.rerank.partition(":")
        RERANK = RerankConfig(
            provider=kind,
            model=where if kind == "local" else "",
            baseUrl=where if kind == "http" else "",
            blend=args.rerank_blend,
            candidates=args.rerank_candidates,
            timeoutMs=600_000,  # quality is measured here, not the deadline
        )
    HYBRID = HybridConfig(
        fusion=args.fusion,
        vectorWeight=args.vector_weight,
        textWeight=1 - args.vector_weight,
        vectorWeightWeak=args.vector_weight_weak,
    )
    data = args.data.split(",")
    configs = args.configs.split(",")
    sources = args.sources.split(",")
    modes = ["keyword", "hybrid"] if args.mode == "both" else [args.mode]
    for name, values, allowed in (
        ("--data", data, {"scifact", "locomo"}),
        ("--configs", configs, {"memindex", "openclaw", "qmd"}),
        ("--sources", sources, set(SOURCES)),
    ):
        if not set(values) <= allowed:
            ap.error(f"{name}: choose from {sorted(allowed)}")
    CACHE.mkdir(parents=True, exist_ok=True)
    RESULTS.mkdir(exist_ok=True)
    STORES[:] = [s if s == "sqlite" else pg_url(s, "memindex_eval") for s in args.store.split(",")]
    t0 = time.time()
    sf = scifact(configs, modes, args.limit_queries) if "scifact" in data else []
    lc = locomo(configs, modes, sources, args.limit_queries) if "locomo" in data else []
    stamp = time.strftime("%Y%m%d-%H%M%S")
    meta = {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "command": "python bench/eval.py " + " ".join(sys.argv[1:]),
        "seconds": time.time() - t0,
        "hybrid": {
            "fusion": HYBRID.fusion,
            "vectorWeight": HYBRID.vectorWeight,
            "vectorWeightWeak": HYBRID.vectorWeightWeak,
        },
        "model": MODEL,
        "windows": WINDOWS,
        "quantizeAt": QUANTIZE_AT,
        "rerank": {"provider": RERANK.provider, "model": RERANK.model, "blend": RERANK.blend}
        if RERANK.provider
        else None,
        "rerankFallbacks": LAST.get("fallbacks", 0),
        "stores": ["sqlite" if s == "sqlite" else "postgresql" for s in STORES],
    }
    table = markdown(sf, lc, meta)
    (RESULTS / f"eval-{stamp}.json").write_text(
        json.dumps({"meta": meta, "scifact": sf, "locomo": lc}, indent=1) + "\n"
    )
    (RESULTS / f"eval-{stamp}.md").write_text(table)
    print()
    print(table)
    print(f"wrote {RESULTS / f'eval-{stamp}.json'} and .md")


if __name__ == "__main__":
    main()
