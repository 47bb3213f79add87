"""A sync's two ends, the same on every store: what a sync of one source starts
from (``begin_files``) and what it leaves behind (``end_files``).

The index belongs to one workspace and one set of chunking settings (its
"fingerprint"); a sync first claims it for the ones it runs with, emptying it when
it held another's rows, and reads the source's file states and the skipped list in
the same step. The pipeline then writes file by file and ends with ``end_files``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from indexer.store.records import FilesAtStart

if TYPE_CHECKING:
    from indexer.store.base import IndexStore

log = logging.getLogger(__name__)


class FileSync:
    """``begin_files`` / ``end_files`` for a store class that has the rest of
    ``IndexStore`` (both backends mix it in)."""

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
