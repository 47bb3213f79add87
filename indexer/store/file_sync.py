"""A sync's two ends, the same on every store: what a sync of one source starts
from (``begin_files``) and what it leaves behind (``end_files``); and what an
in-memory snapshot reads to catch up with the writer (``catch_up``).

The index belongs to one workspace and one set of chunking settings (its
"fingerprint"); a sync first claims it for the ones it runs with, emptying it when
it held another's rows, and reads the source's file states and the skipped list in
the same step. The pipeline then writes file by file and ends with ``end_files``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from indexer.store.records import CatchUp, FilesAtStart

if TYPE_CHECKING:
    from indexer.store.base import IndexStore

log = logging.getLogger(__name__)


class FileSync:
    """``begin_files`` / ``end_files`` and ``catch_up`` for a store class that has
    the rest of ``IndexStore`` (both backends mix it in)."""

    def begin_files(
        self: IndexStore, source: str, *, workspace: str, fingerprint: str, force: bool
    ) -> FilesAtStart:
        """Claim the index for ``workspace`` and ``fingerprint`` (emptied first when
        it belonged to another workspace, was built with other settings, or
        ``force``), then read ``source``'s file states and the skipped list."""
        old_ws, old_fp = self.meta_get("workspace"), self.meta_get("fingerprint")
        reason = None
        if force:
            reason = "forced"
        elif old_ws is not None and old_ws != workspace:
            reason = f"index belonged to workspace {old_ws}"
        elif old_fp is not None and old_fp != fingerprint:
            reason = "chunking settings changed"
        with self.transaction():
            if reason:
                log.info("rebuilding %s: %s", self.generation, reason)
                self.clear()
            self.meta_set("workspace", workspace)
            self.meta_set("fingerprint", fingerprint)
        return FilesAtStart(reason, self.file_states(source), self.skipped())

    def end_files(self: IndexStore, source: str, *, keep: set[str] | None, report: str) -> None:
        """Record the sync's ``report`` (``lastSync``); with ``keep`` (a sync that
        looked at every file), ``source``'s skipped files not in it are no longer
        skipped. Call inside the sync's transaction."""
        if keep is not None:
            self.prune_skips(keep, source)
        self.meta_set("lastSync", report)

    def catch_up(
        self: IndexStore, after: int, new_after: int | None, vectors: bool
    ) -> CatchUp | None:
        """What a snapshot at change ``after`` reads to catch up, in one snapshot of
        the index: the changes since (None: the feed was pruned past it), the chunks
        added since id ``new_after`` and those moved (when it keeps keywords: not
        None), the vectors embedded since (when it keeps ``vectors``)."""
        with self.read_snapshot():
            changes = self.changes_since(after)
            if changes is None:
                return None
            new = [] if new_after is None else self.new_chunks(new_after, changes.moved)
            embedded = self.vector_rows(changes.embedded) if vectors else []
        return CatchUp(changes, new, embedded)
