"""One agent inside the daemon: its index (``engine.AgentIndex`` with pooled readers
and an in-memory snapshot), the writer's schedule and its health."""

from __future__ import annotations

from indexer.config import Config
from indexer.engine import AgentIndex, provider
from indexer.indexing.progress import WorkProgress
from indexer.selection import SharedProviders
from indexer.surfaces.health import HealthReport, TaskHealth
from indexer.surfaces.schedule import Schedule

__all__ = ["AgentRuntime"]

_IDLE_READERS = 8  # read-only connections kept open per agent between requests


class AgentRuntime(AgentIndex):
    """One agent: its ``writer`` (the indexer thread's only), a pool of searchers on
    read-only connections (the request threads'), what the writer does next
    (``schedule``) and how it went (``health``, ``progress``)."""

    def __init__(
        self, cfg: Config, *, note: str = "", providers: SharedProviders | None = None
    ) -> None:
        """``note``: what the agent's writer lock says of this process (its socket);
        ``providers``: the daemon's, shared by its agents (else this agent's own)."""
        super().__init__(
            cfg,
            selection=provider(cfg, providers),
            shared=providers,
            readers=_IDLE_READERS,
            note=note,
        )
        self.note = note
        self.schedule = Schedule()
        self.health = TaskHealth()
        self.progress = WorkProgress()  # the writer's files and embedding backlog

    def report_health(self) -> HealthReport:
        report = self.health.report(self.schedule.pending)
        report["progress"] = self.progress.state()
        if self.schedule.transcript_tails:
            report["transcriptTails"] = self.schedule.transcript_tails
        return report
