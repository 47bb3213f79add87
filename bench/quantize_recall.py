"""How much of the exact vector top-k the quantized snapshot's prefilter keeps, on
real vectors and real queries.

The daemon quantizes an agent's vectors from ``QUANTIZE_AT`` of them
(search/snapshot/vector_memory.py): every row is ranked by the Hamming distance of its sign
bits to the query's, and only the nearest share is scored by int8 · query. The dev
sets are too small for ``bench/eval.py --quantize-at 0`` to see the prefilter (its
pool covers most of them), so this measures it directly: SciFact-dev's chunk
vectors from the index ``bench/eval.py`` built (the local MiniLM model), its
queries embedded by the same model, and for each share of the rows kept by their
bits, the fraction of the exact top-k among them.

    python bench/quantize_recall.py [--queries 400] [--index bench/.cache/scifact-hybrid.sqlite]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import REPO, local_model, shared  # noqa: E402

from indexer.search.snapshot.vector_memory import VectorPart, _distances  # noqa: E402
from indexer.store import Store  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--queries", type=int, default=400)
    ap.add_argument("--index", type=Path, default=REPO / "bench/.cache/scifact-hybrid.sqlite")
    args = ap.parse_args()
    if not args.index.exists():
        sys.exit(f"{args.index}: run 'python bench/eval.py --data scifact --mode hybrid' first")
    from providers.local_gguf import LocalGGUFProvider

    store = Store(args.index, readonly=True)
    key = store.change_versions()[2]
    assert key is not None, "the index has no vectors"
    exact = VectorPart.build(store, key)
    quant = VectorPart.build(store, key, quantize_at=0)
    assert exact is not None and quant is not None and len(quant.segments) == 1
    seg = quant.segments[0]
    assert exact.segments[0].mat is not None and quant.centre is not None
    mat = exact.segments[0].mat  # the same rows in the same order
    model = LocalGGUFProvider(local_model("minilm"))
    lines = shared("eval", "scifact-dev", "queries.jsonl").read_text().splitlines()
    texts = [json.loads(line)["text"] for line in lines[: args.queries]]
    qs = [np.asarray(model.embed_query(t), dtype=np.float32).reshape(-1) for t in texts]
    model.close()
    n = mat.shape[0]
    print(f"{n} vectors, {len(qs)} queries")
    for k in (10, 40):
        for share in (0.004, 0.01, 0.03, 0.1):
            pool = max(k, int(n * share))
            kept = []
            for q in qs:
                top = set(np.argpartition(-(mat @ q), k)[:k].tolist())
                qbits = np.packbits(q > quant.centre)
                qbits = np.pad(qbits, (0, (-qbits.shape[0]) % 8)).view(np.uint64)
                near = set(np.argpartition(_distances(seg, qbits), pool)[:pool].tolist())
                kept.append(len(top & near) / k)
            print(
                f"top {k}: the nearest {share:.1%} by bits ({pool} rows) hold "
                f"{np.mean(kept):.3f} of the exact top {k}"
            )
    store.close()


if __name__ == "__main__":
    main()
