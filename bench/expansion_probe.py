"""Probe: expanding a question's keywords with the corpus's own words nearest to
them in the embedding model (issue #51, item 6). Not part of memindex: it measures
whether the idea earns a place, on the personal dev set (bench/personal).

Every word of the workspace (3+ letters, no stop word) is embedded once with the
local model; each keyword of a question then brings in up to ``--top`` corpus words
whose cosine with it is at least ``--tau`` (not the same word stem), searched as
further OR-ed keywords. The questions are asked as bench/personal_eval.py asks them,
without and with the expansion, in keyword and hybrid mode; the script prints R@6,
MRR@6 and hits@1 of each.

    python bench/expansion_probe.py [--tau 0.6 0.7 0.8] [--top 3] [--model minilm]
                                    [--show]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import eval as bench_eval  # noqa: E402
import personal_eval  # noqa: E402

from indexer.search.query import parse as query_module  # noqa: E402

_LETTERS = re.compile(r"[^\W\d_]+")


def vocabulary(workspace: Path) -> list[str]:
    words: set[str] = set()
    for path in workspace.rglob("*"):
        if path.is_file():
            for w in _LETTERS.findall(path.read_text(encoding="utf-8", errors="ignore").lower()):
                if len(w) >= 3 and w not in query_module.STOP_WORDS:
                    words.add(w)
    return sorted(words)


def _unit(rows: Any) -> np.ndarray:
    m = np.asarray(rows, dtype=np.float32)
    return m / (np.linalg.norm(m, axis=-1, keepdims=True) + 1e-9)


def expander(vocab: list[str], tau: float, top: int, show: bool) -> Callable[[str], list[str]]:
    provider = bench_eval.provider()
    parse = query_module.parse_query  # the real one (``expanded`` replaces it)
    table = _unit(provider.embed_documents(vocab))
    memo: dict[str, list[str]] = {}

    def near(word: str) -> list[str]:
        if word not in memo:
            sims = table @ _unit(provider.embed_documents([word]))[0]
            stem = query_module.stem_prefix(word)
            memo[word] = [
                vocab[i]
                for i in np.argsort(-sims)[:20]
                if sims[i] >= tau
                and not vocab[i].startswith(stem)
                and not word.startswith(query_module.stem_prefix(vocab[i]))
            ][:top]
        return memo[word]

    def expand(question: str) -> list[str]:
        parsed = parse(question)
        if parsed.filler or parsed.exact:
            return []
        extra = [w for t in parsed.terms for w in near(t) if w not in parsed.terms]
        extra = list(dict.fromkeys(extra))
        if show and extra:
            print(f"  {question!r} + {extra}")
        return extra

    return expand


@contextmanager
def expanded(expand: Callable[[str], list[str]]) -> Iterator[None]:
    """Every module that parses queries sees the expanded question's keywords."""
    original = query_module.parse_query

    def parse(question: str) -> Any:
        extra = expand(question)
        return original(question + " " + " ".join(extra)) if extra else original(question)

    users = [
        m
        for m in list(sys.modules.values())
        if getattr(m, "__name__", "").startswith("indexer")
        and getattr(m, "parse_query", None) is original
    ]
    for m in users:
        m.parse_query = parse  # type: ignore[attr-defined]
    try:
        yield
    finally:
        for m in users:
            m.parse_query = original  # type: ignore[attr-defined]


def scores(questions: list[dict[str, Any]], mode: str, model: str) -> str:
    out, _ = personal_eval.run(
        questions, personal_eval.DATA / "workspace", 6, mode=mode, model=model
    )
    ranks = [o["rank"] for o in out if o["kind"] != "not-in-memory"]
    n = len(ranks)
    r6 = sum(r is not None for r in ranks) / n
    mrr = sum(1 / r for r in ranks if r) / n
    h1 = sum(r == 1 for r in ranks) / n
    return f"R@6 {r6:.3f}  MRR@6 {mrr:.3f}  hits@1 {h1:.3f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tau", type=float, nargs="+", default=[0.6, 0.7, 0.8])
    ap.add_argument("--top", type=int, default=3)
    ap.add_argument("--model", default="minilm", choices=bench_eval.LOCAL_MODELS)
    ap.add_argument("--show", action="store_true", help="print each question's expansion")
    a = ap.parse_args()
    bench_eval.MODEL = a.model
    questions = json.loads((personal_eval.DATA / "questions.json").read_text(encoding="utf-8"))
    vocab = vocabulary(personal_eval.DATA / "workspace")
    print(f"vocabulary: {len(vocab)} words; model {a.model}; up to {a.top} per keyword")
    for mode in ("keyword", "hybrid"):
        print(f"{mode:8s} without expansion      {scores(questions, mode, a.model)}")
    for tau in a.tau:
        with expanded(expander(vocab, tau, a.top, a.show)):
            for mode in ("keyword", "hybrid"):
                print(f"{mode:8s} expanded, cosine>={tau:.2f}  {scores(questions, mode, a.model)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
