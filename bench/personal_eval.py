"""Personal-memory dev set: memindex on a realistic agent workspace (bench/personal).

The workspace (bench/personal/workspace) is one user's memory as an OpenClaw agent
keeps it: MEMORY.md, USER.md, 48 daily logs (2026-09-20 .. 2026-11-26) and four
session transcripts (OpenClaw's legacy JSONL). bench/personal/questions.json holds
the questions, each asked at ``asOf`` (2026-11-27T09:00:00Z) and of one kind:
paraphrase, relative-time, decision, exact-id, transcript-only, superseded (the
expected line is the newer statement only), preference, not-in-memory (expected
``[]``). An expected entry is ``{path, line, contains}``: the path as memindex cites
it (workspace-relative, or ``sessions/<file>.jsonl`` with the JSONL line number)
and a piece of the answer that the line must contain.

The script first checks the dataset (every expected line exists and holds its
``contains`` text; exit 1 otherwise), then copies the workspace to a temporary
folder, indexes it with memindex and asks every question (maxResults = k, minScore
0, every source). A result answers when it cites the expected path with startLine
<= line <= endLine (also through its ``also`` citations, the same memory in the
other source). Reported per kind and overall, for answerable questions:

* R@k: the share of questions with an expected line among the first k results
  (k = 6, OpenClaw's default maxResults);
* MRR@k: the mean of 1/rank of the first result that answers (0 past k);
* hits@1: the share answered by the first result;

and for not-in-memory questions, with ``--abstain-below T``, the share that would
abstain: no result scoring T or more (``--abstain-signal relevance``: the query's
relevance signal below T, the rule of memindex's own ``abstain``). Without it, the
distribution (min/median/max) of the best score is shown for answerable and
not-in-memory questions, to choose T from.

Each question is asked with its ``asOf`` (memindex reads "yesterday", "last week"
against it; the days are counted in UTC here, ``--time-zone``). Keyword mode, hybrid
mode with a local model (``--mode hybrid --model minilm|e5-small``, the models
scripts/build_test_model.py builds; bench/eval.py's provider), or both.

    python bench/personal_eval.py [--mode keyword|hybrid|both] [--model minilm]
                                  [--k 6] [--json] [--show-misses] [--date-boost B]
                                  [--abstain-below T [--abstain-signal score|relevance]]
                                  [--check] [--data bench/personal]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from indexer.config import Config, QueryConfig, SessionsConfig  # noqa: E402
from indexer.engine import AgentIndex  # noqa: E402

DATA = Path(__file__).resolve().parent / "personal"
KINDS = (
    "paraphrase",
    "relative-time",
    "decision",
    "exact-id",
    "transcript-only",
    "superseded",
    "preference",
    "not-in-memory",
)
ABSENT = "not-in-memory"


# --- the dataset --------------------------------------------------------------------


def _transcript_text(raw: str) -> str | None:
    """The text of the message on one JSONL line, None for a line that is no message."""
    try:
        obj = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(obj, dict) or obj.get("type") != "message":
        return None
    inner = obj.get("message")
    content = (inner if isinstance(inner, dict) else obj).get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(
            b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str)
        )
    return None


def _line(ws: Path, path: str, line: int) -> tuple[str | None, str]:
    """The text at ``path``:``line`` (a transcript line: its message's text), or None
    and why not."""
    if path.startswith("/") or ".." in Path(path).parts:
        return None, "not a workspace-relative path"
    f = ws / path
    if not f.is_file():
        return None, "no such file"
    lines = f.read_text(encoding="utf-8").splitlines()
    if not 1 <= line <= len(lines):
        return None, f"line {line} is out of range (1..{len(lines)})"
    text = lines[line - 1]
    if path.startswith("sessions/"):
        msg = _transcript_text(text)
        if msg is None:
            return None, f"JSONL line {line} is not a message"
        return msg, ""
    return text, ""


def validate(questions: Any, ws: Path) -> list[str]:
    """Every problem in the dataset, as one line each (none: it is sound)."""
    problems: list[str] = []
    if not isinstance(questions, list):
        return ["questions.json is not a list"]
    seen: set[str] = set()
    for i, q in enumerate(questions):
        qid = q.get("id", f"#{i}") if isinstance(q, dict) else f"#{i}"
        if not isinstance(q, dict):
            problems.append(f"{qid}: not an object")
            continue
        if qid in seen:
            problems.append(f"{qid}: duplicate id")
        seen.add(qid)
        kind, exp = q.get("kind"), q.get("expected")
        if kind not in KINDS:
            problems.append(f"{qid}: unknown kind {kind!r}")
        if not isinstance(q.get("question"), str) or not q["question"].strip():
            problems.append(f"{qid}: no question")
        try:
            datetime.fromisoformat(str(q.get("asOf")).replace("Z", "+00:00"))
        except ValueError:
            problems.append(f"{qid}: asOf {q.get('asOf')!r} is not an ISO time")
        if not isinstance(exp, list):
            problems.append(f"{qid}: expected is not a list")
            continue
        if (kind == ABSENT) != (not exp):
            problems.append(f"{qid}: expected must be [] exactly for {ABSENT} questions")
        for e in exp:
            path, line = e.get("path"), e.get("line")
            if not isinstance(path, str) or not isinstance(line, int):
                problems.append(f"{qid}: expected entry {e!r} needs a path and a line")
                continue
            text, why = _line(ws, path, line)
            if text is None:
                problems.append(f"{qid}: {path}:{line}: {why}")
                continue
            want = e.get("contains")
            if not isinstance(want, str) or not want:
                problems.append(f"{qid}: {path}:{line}: no 'contains' text to check")
            elif want.lower() not in text.lower():
                problems.append(f"{qid}: {path}:{line} does not contain {want!r}: {text[:100]!r}")
    return problems


# --- running --------------------------------------------------------------------------


def _cites(r: Mapping[str, Any], path: str, line: int) -> bool:
    spans: list[Mapping[str, Any]] = [r, *r.get("also", [])]
    return any(s["path"] == path and s["startLine"] <= line <= s["endLine"] for s in spans)


def _open(cfg: Config, mode: str, model: str) -> AgentIndex:
    if mode == "keyword":
        return AgentIndex(cfg)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import eval as bench_eval  # bench/eval.py: the local model, query vectors memoised

    bench_eval.MODEL = model
    return bench_eval.open_index(cfg, "hybrid")


def run(
    questions: list[dict[str, Any]],
    src: Path,
    k: int,
    *,
    mode: str = "keyword",
    model: str = "minilm",
    date_boost: float | None = None,
    zone: str = "UTC",
) -> tuple[list[dict[str, Any]], float]:
    """Each question's outcome: rank of the first answering result (None past k), best
    score, relevance signal, the top citations; and the indexing time in seconds."""
    out: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="personal-eval-") as tmp:
        ws = Path(tmp) / "ws"
        shutil.copytree(src, ws)
        cfg = Config(
            workspace=ws,
            indexPath=Path(tmp) / "i.sqlite",
            sessions=SessionsConfig(dir=str(ws / "sessions")),
            # abstain: true below reports the relevance signal; at 0 nothing abstains
            query=QueryConfig(abstainBelow=0.0)
            if date_boost is None
            else QueryConfig(abstainBelow=0.0, dateBoost=date_boost),
        )
        with _open(cfg, mode, model) as idx:
            t0 = time.perf_counter()
            idx.sync()
            indexed = time.perf_counter() - t0
            for q in questions:
                t1 = time.perf_counter()
                res = idx.search(
                    q["question"],
                    max_results=k,
                    min_score=0,
                    mode=mode,
                    abstain=True,
                    as_of=q["asOf"],
                    time_zone=zone,
                )
                ms = (time.perf_counter() - t1) * 1000
                hits = res["results"][:k]
                rank = next(
                    (
                        n
                        for n, r in enumerate(hits, 1)
                        if any(_cites(r, e["path"], e["line"]) for e in q["expected"])
                    ),
                    None,
                )
                out.append(
                    {
                        "id": q["id"],
                        "kind": q["kind"],
                        "question": q["question"],
                        "rank": rank,
                        "topScore": max((r["score"] for r in hits), default=0.0),
                        "relevance": res.get("relevance"),
                        "abstained": res.get("abstained"),
                        "ms": round(ms, 2),
                        "expected": [f"{e['path']}#L{e['line']}" for e in q["expected"]],
                        "cited": [r["citation"] for r in hits],
                        "scores": [round(r["score"], 4) for r in hits],
                    }
                )
    return out, indexed


# --- scoring --------------------------------------------------------------------------


def _abstains(o: dict[str, Any], below: float, signal: str) -> bool:
    if signal == "relevance":
        return not o["cited"] or float(o["relevance"] or 0.0) < below
    return float(o["topScore"]) < below


def _dist(xs: list[float]) -> dict[str, float] | None:
    if not xs:
        return None
    return {
        "min": round(min(xs), 4),
        "median": round(statistics.median(xs), 4),
        "max": round(max(xs), 4),
    }


def score(
    outcomes: list[dict[str, Any]], below: float | None, signal: str
) -> dict[str, dict[str, Any]]:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for o in outcomes:
        groups[o["kind"]].append(o)
        if o["kind"] != ABSENT:
            groups["answerable"].append(o)
    table: dict[str, dict[str, Any]] = {}
    for name in (*KINDS, "answerable"):
        os_ = groups.get(name, [])
        if not os_:
            continue
        row: dict[str, Any] = {"n": len(os_)}
        if name == ABSENT:
            row["topScore"] = _dist([o["topScore"] for o in os_])
            row["relevance"] = _dist([o["relevance"] or 0.0 for o in os_])
            if below is not None:
                row["abstain"] = sum(_abstains(o, below, signal) for o in os_) / len(os_)
        else:
            ranks = [o["rank"] for o in os_]
            row["R@k"] = sum(r is not None for r in ranks) / len(os_)
            row["MRR@k"] = sum(1 / r for r in ranks if r is not None) / len(os_)
            row["hits@1"] = sum(r == 1 for r in ranks) / len(os_)
            if name == "answerable":
                row["topScore"] = _dist([o["topScore"] for o in os_])
                row["relevance"] = _dist([o["relevance"] or 0.0 for o in os_])
                if below is not None:
                    row["falseAbstain"] = sum(_abstains(o, below, signal) for o in os_) / len(os_)
        table[name] = row
    return table


def _fmt_dist(d: dict[str, float] | None) -> str:
    return "-" if d is None else f"{d['min']:.3f} / {d['median']:.3f} / {d['max']:.3f}"


def print_table(table: dict[str, dict[str, Any]], k: int, below: float | None, signal: str) -> None:
    print(f"{'kind':<16} {'n':>3}  {f'R@{k}':>6}  {f'MRR@{k}':>6}  {'hits@1':>6}")
    for name, row in table.items():
        if name == ABSENT:
            continue
        if name == "answerable":
            print("-" * 45)
        print(
            f"{name:<16} {row['n']:>3}  {row['R@k']:>6.3f}  {row['MRR@k']:>6.3f}  "
            f"{row['hits@1']:>6.3f}"
        )
    absent = table.get(ABSENT)
    if absent:
        print(f"{ABSENT:<16} {absent['n']:>3}  ", end="")
        if below is None:
            print("abstention: see the score distribution (or pass --abstain-below)")
        else:
            rule = "best score" if signal == "score" else "relevance"
            false = table.get("answerable", {}).get("falseAbstain", 0.0)
            print(
                f"abstain {absent['abstain']:.3f} ({rule} < {below:g}); "
                f"answerable wrongly abstained {false:.3f}"
            )
    print()
    print(f"{'min / median / max':<22} {'best score in top ' + str(k):<26} relevance signal")
    for name in ("answerable", ABSENT):
        shown = table.get(name)
        if shown:
            print(f"{name:<22} {_fmt_dist(shown['topScore']):<26} {_fmt_dist(shown['relevance'])}")


def main() -> int:
    ap = argparse.ArgumentParser(
        description=(
            "Score memindex on the personal-memory dev set (bench/personal): R@k, MRR@k "
            "and hits@1 per question kind, abstention on not-in-memory questions, in "
            "keyword and/or hybrid mode (a local model)."
        )
    )
    ap.add_argument(
        "--data", type=Path, default=DATA, help="folder with workspace/ and questions.json"
    )
    ap.add_argument("--mode", choices=["keyword", "hybrid", "both"], default="keyword")
    ap.add_argument(
        "--model", choices=["minilm", "e5-small"], default="minilm", help="hybrid's local model"
    )
    ap.add_argument(
        "--date-boost", type=float, default=None, help="query.dateBoost (default: memindex's)"
    )
    ap.add_argument("--time-zone", default="UTC", help="the days of asOf and messages")
    ap.add_argument(
        "--k", type=int, default=6, help="results per question (OpenClaw's maxResults: 6)"
    )
    ap.add_argument(
        "--abstain-below",
        type=float,
        default=None,
        metavar="T",
        help="count a question as abstained when its signal is below T "
        "(default: show the score distributions instead)",
    )
    ap.add_argument(
        "--abstain-signal",
        choices=["score", "relevance"],
        default="score",
        help="score: the best result's score (no result at or above T); relevance: the "
        "query's relevance signal, as memindex's own abstain judges it",
    )
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    ap.add_argument(
        "--show-misses", action="store_true", help="list the questions not answered in the top k"
    )
    ap.add_argument("--check", action="store_true", help="only validate the dataset")
    args = ap.parse_args()
    if args.k < 1:
        ap.error("--k must be at least 1")

    ws = args.data / "workspace"
    try:
        questions = json.loads((args.data / "questions.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        print(f"personal_eval: cannot read questions.json: {exc}", file=sys.stderr)
        return 1
    problems = validate(questions, ws)
    if problems:
        print(f"personal_eval: {len(problems)} problem(s) in the dataset:", file=sys.stderr)
        for p in problems:
            print("  " + p, file=sys.stderr)
        return 1
    if args.check:
        kinds = {kd: sum(q["kind"] == kd for q in questions) for kd in KINDS}
        counts = ", ".join(f"{kd} {n}" for kd, n in kinds.items())
        print(f"dataset ok: {len(questions)} questions: {counts}")
        return 0

    modes = ["keyword", "hybrid"] if args.mode == "both" else [args.mode]
    for n, mode in enumerate(modes):
        if n:
            print()
        code = _report(args, questions, ws, mode)
        if code:
            return code
    return 0


def _report(args: argparse.Namespace, questions: list[dict[str, Any]], ws: Path, mode: str) -> int:
    outcomes, indexed = run(
        questions,
        ws,
        args.k,
        mode=mode,
        model=args.model,
        date_boost=args.date_boost,
        zone=args.time_zone,
    )
    table = score(outcomes, args.abstain_below, args.abstain_signal)
    misses = [o for o in outcomes if o["kind"] != ABSENT and o["rank"] is None]
    if args.json:
        print(
            json.dumps(
                {
                    "mode": mode,
                    "k": args.k,
                    "abstainBelow": args.abstain_below,
                    "abstainSignal": args.abstain_signal,
                    "indexSeconds": round(indexed, 3),
                    "table": table,
                    "questions": outcomes,
                },
                indent=1,
            )
        )
        return 0
    ms = statistics.mean(o["ms"] for o in outcomes)
    print(
        f"{args.data.name}: {len(outcomes)} questions, mode {mode}"
        f"{' (' + args.model + ')' if mode == 'hybrid' else ''}, k {args.k}; "
        f"indexed in {indexed:.2f} s, {ms:.1f} ms per search\n"
    )
    print_table(table, args.k, args.abstain_below, args.abstain_signal)
    if args.show_misses:
        print(f"\nmisses ({len(misses)}): expected | first results")
        for o in misses:
            print(f"  {o['id']} [{o['kind']}] {o['question']}")
            print(f"      expected {', '.join(o['expected'])}")
            print(f"      got      {', '.join(o['cited'][:3]) or '(nothing)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
