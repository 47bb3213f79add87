"""Provider batch jobs (OpenAI Batch, Gemini batch, Voyage batch).

A provider with ``supports_batch_jobs`` implements ``submit_batch(items) -> job id``
and ``poll_batch(job id) -> BatchState``. The caller keeps job ids in durable storage
so a restarted process collects the jobs it already paid for instead of submitting
them again; custom ids are chunk hashes, so results land in the embedding cache.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import numpy.typing as npt

__all__ = ["BatchState", "PollBackoff"]


@dataclass
class BatchState:
    state: Literal["running", "done", "failed"]
    vectors: dict[str, npt.NDArray[np.float32]] = field(default_factory=dict)
    failed: list[str] = field(default_factory=list)  # ids to embed directly instead
    reason: str = ""
    # Providers whose results come back in request order, without custom ids
    # (Gemini inline batches): one vector or None per submitted item.
    ordered: list[npt.NDArray[np.float32] | None] | None = None


@dataclass
class PollBackoff:
    """Poll intervals that grow: 1 s, 2 s, 4 s … up to ``maximum``."""

    initial: float = 1.0
    maximum: float = 60.0
    factor: float = 2.0
    _next: float = 0.0

    def next(self) -> float:
        self._next = (
            self.initial if self._next == 0 else min(self.maximum, self._next * self.factor)
        )
        return self._next
