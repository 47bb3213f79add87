"""Shared helpers for bench scripts: locating ../shared, building indexes, metrics."""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("MEMINDEX_SHARED", REPO.parent / "shared"))


def shared(*parts: str) -> Path:
    p = SHARED.joinpath(*parts)
    if not p.exists():
        sys.exit(f"bench: {p} not found (set MEMINDEX_SHARED to the shared/ folder)")
    return p


LOCAL_MODELS = ("minilm", "e5-small")  # --model of the bench scripts


def local_model(name: str) -> Path:
    """The GGUF file of a ``LOCAL_MODELS`` name, built on first use: all-MiniLM-L6-v2
    (scripts/build_test_model.py) or multilingual-e5-small (scripts/build_e5_model.py)."""
    sys.path.insert(0, str(REPO / "scripts"))
    if name == "e5-small":
        import build_e5_model

        return build_e5_model.build()
    if name != "minilm":
        raise ValueError(f"unknown local model {name!r}: one of {LOCAL_MODELS}")
    import build_test_model

    return build_test_model.build()


def pg_url(store: str, db: str) -> str:
    """A PostgreSQL URL for a bench's ``--store``: the URL itself, or with
    ``pgserver`` a server of the pgserver wheel (the development extra) kept in
    bench/.cache/pgdata and database ``db`` on it (made if missing)."""
    if store != "pgserver":
        return store
    import pgserver  # type: ignore[import-untyped]

    srv = pgserver.get_server(REPO / "bench" / ".cache" / "pgdata", cleanup_mode=None)
    if not srv.psql(f"SELECT 1 FROM pg_database WHERE datname='{db}';").strip().endswith("1 row)"):
        srv.psql(f"CREATE DATABASE {db};")
    return str(srv.get_uri(db))


def ndcg_at(ranked: Sequence[str], relevant: set[str], k: int) -> float:
    dcg = sum(1.0 / math.log2(i + 2) for i, d in enumerate(ranked[:k]) if d in relevant)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(k, len(relevant))))
    return dcg / ideal if ideal else 0.0


def recall_at(ranked: Sequence[str], relevant: set[str], k: int) -> float:
    return len(set(ranked[:k]) & relevant) / len(relevant) if relevant else 0.0


def percentile(values: Sequence[float], p: float) -> float:
    s = sorted(values)
    if not s:
        return float("nan")
    idx = min(len(s) - 1, max(0, math.ceil(p / 100 * len(s)) - 1))
    return s[idx]
