"""What the pooled searcher knows of the index for one request (``IndexFacts``),
handed to the request's run (``run.search``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from indexer.search.snapshot.live import Snapshot, Versions
    from providers.calibration import Scale

__all__ = ["IndexFacts"]


@dataclass(frozen=True)
class IndexFacts:
    """What the pooled searcher knows of the index for this request: the versions it
    read, the daemon's snapshot at least that new, whether vectors of the provider's
    model are built, whether both sources are searched and present, and (for a
    keyword-only answer) why there are no vectors."""

    versions: Versions
    snapshot: Snapshot | None
    vectors: bool
    both_sources: bool
    no_vectors: str
    scale: Scale | None = None  # the model's similarity scale (providers.calibration)
