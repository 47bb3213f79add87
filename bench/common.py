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
