"""Ablation: every ranking stage switched in turn, on every evaluation set.

Each set is indexed once per mode (keyword; hybrid with a local model); then every
question is asked with the product's defaults and again with each switchable stage
of ``query.stages`` flipped (a stage on by default switched off, one off by default
switched on) through the request's ``stages`` override, so the same index answers
every configuration. Per set and mode it prints the defaults' MRR@10, hits@1 and
R@10 and, per flipped stage, the change of each, with how many questions ranked
their first answer higher / lower (``+w/-l``).

The sets:

* ``personal``, ``personal2``, ``holdout_b``, ``holdout_c``, ``holdout_d``: the
  personal-memory sets in bench/ (bench/personal_eval.py's format; not-in-memory
  questions left out); a question's R@10 is 1 when a result in the first 10 cites
  an expected line;
* ``locomo``: LoCoMo-dev (../shared/eval), categories 1-4, each conversation's daily
  logs and transcripts searched together; R@10 is evidence recall;
* ``scifact``: SciFact-dev claims over its documents, at document level (a document
  ranks at its best chunk); R@10 is the relevant documents' recall.

Which set each stage was made on, and what it gives on the others, is in
docs/RETRIEVAL.md ("The stages, measured").

    python bench/ablate.py [--sets personal,personal2,holdout_b,holdout_c,holdout_d,locomo,scifact]
                           [--modes keyword,hybrid] [--stages NAME,...] [--model minilm]
                           [--limit-queries N] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent))

import eval as bench_eval  # noqa: E402
from common import shared  # noqa: E402
from personal_eval import ABSENT, _cites  # noqa: E402

from indexer.config import Config, ExtraPath, QueryConfig, SessionsConfig, StagesConfig  # noqa: E402
from indexer.engine import AgentIndex  # noqa: E402

PERSONAL = ("personal", "personal2", "holdout_b", "holdout_c", "holdout_d")
SETS = (*PERSONAL, "locomo", "scifact")
K = 10


@dataclass
class Item:
    """One question: what to ask, and how its results are judged: (rank of the first
    answering result or None, recall in the first K)."""

    question: str
    as_of: str | None
    judge: Callable[[list[dict[str, Any]]], tuple[int | None, float]]
    max_results: int = K


def flips() -> dict[str, dict[str, bool]]:
    """Each switchable stage's flip: {stage name: {stage: not its default}}."""
    defaults = StagesConfig()
    return {f.name: {f.name: not getattr(defaults, f.name)} for f in fields(StagesConfig)}


# -- the sets ---------------------------------------------------------------------------


@contextmanager
def personal(
    name: str, mode: str, limit: int | None
) -> Iterator[list[tuple[AgentIndex, list[Item]]]]:
    data = BENCH / name
    questions = json.loads((data / "questions.json").read_text(encoding="utf-8"))
    questions = [q for q in questions if q["kind"] != ABSENT][:limit]
    with tempfile.TemporaryDirectory(prefix="ablate-") as tmp:
        ws = Path(tmp) / "ws"
        shutil.copytree(data / "workspace", ws)
        cfg = Config(
            workspace=ws,
            indexPath=Path(tmp) / "i.sqlite",
            sessions=SessionsConfig(dir=str(ws / "sessions")),
            query=QueryConfig(abstainBelow=0.0),
        )
        with bench_eval.open_index(cfg, mode) as idx:
            idx.sync()

            def judge(
                q: dict[str, Any],
            ) -> Callable[[list[dict[str, Any]]], tuple[int | None, float]]:
                def j(res: list[dict[str, Any]]) -> tuple[int | None, float]:
                    rank = next(
                        (
                            n
                            for n, r in enumerate(res[:K], 1)
                            if any(_cites(r, e["path"], e["line"]) for e in q["expected"])
                        ),
                        None,
                    )
                    return rank, 1.0 if rank is not None else 0.0

                return j

            yield [(idx, [Item(q["question"], q["asOf"], judge(q)) for q in questions])]


@contextmanager
def locomo(mode: str, limit: int | None) -> Iterator[list[tuple[AgentIndex, list[Item]]]]:
    root = shared("eval", "locomo-dev")
    queries = [json.loads(x) for x in (root / "queries.jsonl").read_text().splitlines()]
    queries = [q for q in queries if q["category"] in (1, 2, 3, 4)][:limit]
    by_conv: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for q in queries:
        by_conv[str(q["sample_id"])].append(q)

    def judge(q: dict[str, Any]) -> Callable[[list[dict[str, Any]]], tuple[int | None, float]]:
        gold = bench_eval._gold(q, "both")
        every = [g for ranges in gold.values() for g in ranges]

        def j(res: list[dict[str, Any]]) -> tuple[int | None, float]:
            hits = [
                tuple((c["path"], c["startLine"], c["endLine"]) for c in [r, *r.get("also", [])])
                for r in res[:K]
            ]
            rank = next(
                (
                    n
                    for n, h in enumerate(hits, 1)
                    if any(bench_eval._overlaps(h, g) for g in every)
                ),
                None,
            )
            return rank, bench_eval._recall(gold, hits, K)

        return j

    with ExitStack() as stack:
        parts = []
        for conv, qs in sorted(by_conv.items()):
            logs = sorted(p.name[:10] for p in (root / conv / "memory").glob("????-??-??*.md"))
            as_of = f"{logs[-1]}T23:59:00+00:00" if logs else None
            cfg = Config(
                workspace=root / conv,
                indexPath=bench_eval.CACHE / f"locomo-{conv}-{mode}.sqlite",
                sessions=SessionsConfig(dir=str(root / conv / "sessions")),
                query=QueryConfig(abstainBelow=0.0),
            )
            idx = stack.enter_context(bench_eval.open_index(cfg, mode))
            idx.sync()
            parts.append((idx, [Item(q["question"], as_of, judge(q)) for q in qs]))
        yield parts


@contextmanager
def scifact(mode: str, limit: int | None) -> Iterator[list[tuple[AgentIndex, list[Item]]]]:
    root = shared("eval", "scifact-dev")
    qrels: dict[str, set[str]] = defaultdict(set)
    for line in (root / "qrels_docs.tsv").read_text().splitlines():
        qid, _, doc, rel = line.split("\t")
        if int(rel) > 0:
            qrels[qid].add(doc)
    queries = [json.loads(x) for x in (root / "queries.jsonl").read_text().splitlines()]
    queries = [q for q in queries if q["qid"] in qrels][:limit]
    cfg = Config(
        workspace=root,
        extraPaths=(ExtraPath(root / "docs"),),
        indexPath=bench_eval.CACHE / f"scifact-{mode}.sqlite",
        query=QueryConfig(abstainBelow=0.0, minScore=0.0),
    )
    with bench_eval.open_index(cfg, mode) as idx:
        idx.sync()

        def judge(q: dict[str, Any]) -> Callable[[list[dict[str, Any]]], tuple[int | None, float]]:
            relevant = qrels[q["qid"]]

            def j(res: list[dict[str, Any]]) -> tuple[int | None, float]:
                docs: list[str] = []
                for r in res:
                    d = r["path"].removeprefix("extra/docs/")
                    d = d if d.startswith("docs/") else f"docs/{d}"
                    if d not in docs:
                        docs.append(d)
                rank = next((n for n, d in enumerate(docs[:K], 1) if d in relevant), None)
                return rank, len(set(docs[:K]) & relevant) / len(relevant)

            return j

        yield [(idx, [Item(q["text"], None, judge(q), max_results=40) for q in queries])]


def open_set(name: str, mode: str, limit: int | None) -> Any:
    if name in PERSONAL:
        return personal(name, mode, limit)
    return locomo(mode, limit) if name == "locomo" else scifact(mode, limit)


# -- running ---------------------------------------------------------------------------


def ask(idx: AgentIndex, it: Item, mode: str, stages: dict[str, bool]) -> tuple[int | None, float]:
    res = idx.search(
        it.question,
        max_results=it.max_results,
        min_score=0.0,
        mode=mode,
        as_of=it.as_of,
        time_zone="UTC",
        stages=stages or None,
    )
    return it.judge(res["results"])


def measure(outcomes: list[tuple[int | None, float]]) -> dict[str, float]:
    n = len(outcomes) or 1
    return {
        "MRR@10": sum(1.0 / r for r, _ in outcomes if r is not None) / n,
        "hits@1": sum(1 for r, _ in outcomes if r == 1) / n,
        "R@10": sum(rec for _, rec in outcomes) / n,
    }


def run_set(
    name: str, mode: str, stage_flips: dict[str, dict[str, bool]], limit: int | None
) -> dict[str, Any]:
    t0 = time.perf_counter()
    outcomes: dict[str, list[tuple[int | None, float]]] = defaultdict(list)
    with open_set(name, mode, limit) as parts:
        for idx, items in parts:
            for it in items:
                outcomes["defaults"].append(ask(idx, it, mode, {}))
                for stage, flip in stage_flips.items():
                    outcomes[stage].append(ask(idx, it, mode, flip))
    base = outcomes["defaults"]
    out: dict[str, Any] = {"set": name, "mode": mode, "n": len(base), "defaults": measure(base)}
    for stage in stage_flips:
        got = outcomes[stage]
        m = measure(got)
        wins = sum(1 for (a, _), (b, _) in zip(base, got, strict=True) if _better(b, a))
        losses = sum(1 for (a, _), (b, _) in zip(base, got, strict=True) if _better(a, b))
        out[stage] = {
            **{k: round(v - out["defaults"][k], 4) for k, v in m.items()},
            "better": wins,
            "worse": losses,
        }
    out["defaults"] = {k: round(v, 4) for k, v in out["defaults"].items()}
    out["seconds"] = round(time.perf_counter() - t0, 1)
    print(json.dumps(out), file=sys.stderr, flush=True)
    return out


def _better(a: int | None, b: int | None) -> bool:
    """Rank ``a`` finds the first answer higher than rank ``b``."""
    return a is not None and (b is None or a < b)


def _cell(m: dict[str, Any], fmt: str) -> str:
    return " / ".join(fmt.format(m[k]) for k in ("MRR@10", "hits@1", "R@10"))


def table(results: list[dict[str, Any]], stage_flips: dict[str, dict[str, bool]]) -> str:
    lines = []
    for mode in dict.fromkeys(r["mode"] for r in results):
        rs = [r for r in results if r["mode"] == mode]
        lines.append(
            f"\n{mode}: the defaults, then each stage flipped "
            "(Δ MRR@10 / Δ hits@1 / Δ R@10, +better/-worse questions)\n"
        )
        lines.append("| stage | " + " | ".join(f"{r['set']} (n {r['n']})" for r in rs) + " |")
        lines.append("|---|" + "---|" * len(rs))
        lines.append(
            "| defaults | " + " | ".join(_cell(r["defaults"], "{:.3f}") for r in rs) + " |"
        )
        for stage, flip in stage_flips.items():
            label = f"{stage} {'off' if not flip[stage] else 'on'}"
            cells = []
            for r in rs:
                d = r[stage]
                if not (
                    d["better"] or d["worse"] or any(d[k] for k in ("MRR@10", "hits@1", "R@10"))
                ):
                    cells.append("·")
                else:
                    cells.append(f"{_cell(d, '{:+.3f}')} (+{d['better']}/-{d['worse']})")
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--modes", default="keyword,hybrid")
    ap.add_argument("--stages", default="", help="only these stages (default: every switch)")
    ap.add_argument("--model", default="minilm", help="hybrid's local model")
    ap.add_argument("--limit-queries", type=int, default=None)
    ap.add_argument("--json", default="", help="also write the figures to this file")
    args = ap.parse_args()
    bench_eval.MODEL = args.model
    every = flips()
    wanted = [s for s in args.stages.split(",") if s]
    unknown = [s for s in wanted if s not in every]
    if unknown:
        ap.error(f"no stage {', '.join(unknown)} (known: {', '.join(every)})")
    stage_flips = {s: every[s] for s in (wanted or every)}
    results = []
    for mode in args.modes.split(","):
        for name in args.sets.split(","):
            if name not in SETS:
                ap.error(f"no set {name!r} (known: {', '.join(SETS)})")
            results.append(run_set(name, mode, stage_flips, args.limit_queries))
    print(table(results, stage_flips))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
