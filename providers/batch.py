"""Provider batch jobs (OpenAI Batch, Gemini batch, Voyage batch).

A provider with ``supports_batch_jobs`` implements ``submit_batch(items) -> job id``
and ``poll_batch(job id) -> BatchState``. The caller keeps job ids in durable storage
so a restarted process collects the jobs it already paid for instead of submitting
them again; custom ids are chunk hashes, so results land in the embedding cache.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from .errors import ProviderError

__all__ = ["RUNNING_STATES", "BatchState", "parse_output_file"]

# OpenAI-style batch statuses (OpenAI, Voyage) that mean "not finished yet".
RUNNING_STATES = ("validating", "in_progress", "finalizing", "cancelling")


@dataclass
class BatchState:
    state: Literal["running", "done", "failed"]
    vectors: dict[str, npt.NDArray[np.float32]] = field(default_factory=dict)
    failed: list[str] = field(default_factory=list)  # ids to embed directly instead
    reason: str = ""
    # Providers whose results come back in request order, without custom ids
    # (Gemini inline batches): one vector or None per submitted item.
    ordered: list[npt.NDArray[np.float32] | None] | None = None


def parse_output_file(
    content: str, vector: Callable[[list[Any]], npt.NDArray[np.float32]]
) -> BatchState:
    """An OpenAI-style batch output file (one ``{custom_id, response: {status_code,
    body: {data: [{embedding}]}}}`` per line) as a finished BatchState. ``vector``
    turns a response's ``data`` list into one checked vector. Unreadable lines and
    failed requests leave their ids out: their chunks are embedded directly."""
    vectors: dict[str, npt.NDArray[np.float32]] = {}
    failed: list[str] = []
    for line in content.splitlines():
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            cid = str(rec["custom_id"])
            resp = rec.get("response") or {}
            if resp.get("status_code") != 200:
                failed.append(cid)
                continue
            vectors[cid] = vector(resp["body"]["data"])
        except (ValueError, KeyError, TypeError, ProviderError):
            continue
    return BatchState("done", vectors=vectors, failed=failed)
