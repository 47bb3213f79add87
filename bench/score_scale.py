"""Cosines on one scale across models (providers/calibration.py), measured.

For each local model: its scale (``measure``), then the best cosine in the index of
every question (the vector side of a search alone) for LoCoMo-dev (categories 1-4
asked of their own conversation: answerable; asked of the next conversation's
memory: unanswerable, "cross") and the personal set (answerable, not-in-memory),
raw and as a search shows it (``calibrate``), with the share that reaches
``minScore`` (0.35) either way.

    MEMINDEX_SHARED=../shared python bench/score_scale.py [--models minilm,e5-small]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import eval as be  # noqa: E402
from common import shared  # noqa: E402

from indexer.config import Config, SessionsConfig  # noqa: E402
from providers.calibration import Scale, calibrate, measure  # noqa: E402

PERSONAL = Path(__file__).resolve().parent / "personal"
MIN_SCORE = 0.35


def best_cosines(
    cfg: Config, questions: dict[str, list[str]]
) -> tuple[dict[str, list[float]], Scale]:
    with be.open_index(cfg, "hybrid") as idx:
        idx.sync()
        rows = list(idx.store.all_vectors())
        m = np.stack([np.frombuffer(r[3], dtype="<f4") for r in rows])
        out = {
            kind: [float((m @ idx.provider.embed_query(q)[0]).max()) for q in qs]
            for kind, qs in questions.items()
        }
        return out, measure(idx.provider)


def run(model: str, tmp: Path) -> tuple[Scale, dict[str, list[float]]]:
    be.MODEL, be._PROVIDER = model, None
    root = shared("eval", "locomo-dev")
    qs = [json.loads(x) for x in (root / "queries.jsonl").read_text().splitlines()]
    by: dict[str, list[str]] = defaultdict(list)
    for q in qs:
        if q["category"] in (1, 2, 3, 4):
            by[str(q["sample_id"])].append(q["question"])
    convs = sorted(by)
    got: dict[str, list[float]] = defaultdict(list)
    scale = None
    for i, c in enumerate(convs):
        cfg = Config(
            workspace=root / c,
            indexPath=tmp / f"{model}-{c}.sqlite",
            sessions=SessionsConfig(dir=str(root / c / "sessions")),
        )
        sims, scale = best_cosines(
            cfg, {"LoCoMo answerable": by[c], "LoCoMo cross": by[convs[(i + 1) % len(convs)]]}
        )
        for k, v in sims.items():
            got[k] += v
    personal = json.loads((PERSONAL / "questions.json").read_text())
    personal = personal["questions"] if isinstance(personal, dict) else personal
    ws = tmp / f"{model}-personal"
    shutil.copytree(PERSONAL / "workspace", ws)
    cfg = Config(
        workspace=ws,
        indexPath=tmp / f"{model}-p.sqlite",
        sessions=SessionsConfig(dir=str(ws / "sessions")),
    )
    kinds = {
        "personal answerable": [q["question"] for q in personal if q["kind"] != "not-in-memory"],
        "personal not-in-memory": [q["question"] for q in personal if q["kind"] == "not-in-memory"],
    }
    sims, scale = best_cosines(cfg, kinds)
    got.update(sims)
    assert scale is not None
    return scale, got


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="minilm,e5-small")
    args = ap.parse_args()
    print(
        "| model | scale (related / unrelated / spread) | questions | n "
        f"| best cosine p5 / p50 / p95 | as shown p5 / p50 / p95 | reach {MIN_SCORE} raw / shown |"
    )
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="score-scale-") as tmp:
        for model in args.models.split(","):
            scale, got = run(model, Path(tmp))
            for kind, xs in got.items():
                raw = np.asarray(xs)
                shown = np.asarray([calibrate(x, scale) for x in xs])
                pct = lambda a: " / ".join(f"{np.percentile(a, p):.2f}" for p in (5, 50, 95))  # noqa: E731
                print(
                    f"| {model} | {scale.related:.3f} / {scale.unrelated:.3f} / {scale.spread:.3f} "
                    f"| {kind} | {len(xs)} | {pct(raw)} | {pct(shown)} "
                    f"| {np.mean(raw >= MIN_SCORE):.2f} / {np.mean(shown >= MIN_SCORE):.2f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
