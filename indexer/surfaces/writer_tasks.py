"""The daemon's writer tasks, run on its one indexer thread: what is due for each
agent (``run_due``), and reindex requests (``run_jobs``).

Each task (the first full sync, a memory sync, a transcript slice, an embedding
slice, a reindex) runs through ``_attempt``: marked busy for ``status`` (its
``should_stop`` beats the heartbeat), and on failure recorded (``status`` shows it
until that task succeeds), a rebuild queued if the index file is damaged, and a
retry scheduled with back-off. Transcripts and embedding run a slice at a time, so
memory files, reindex requests and shutdown are served in between.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

from indexer.api import ReindexResponse
from indexer.errors import InvalidParams, index_damaged
from indexer.surfaces.agent import AgentRuntime

__all__ = ["Job", "WriterTasks"]

log = logging.getLogger(__name__)

# Transcripts are read this long at a time: a large one is indexed in slices, with
# memory files, requests for a reindex and shutdown served in between.
_SESSIONS_SLICE_S = 1.0
_EMBED_SLICE_S = 2.0  # likewise, embedding a backlog

Job = tuple[str, bool, "Future[ReindexResponse]"]  # (agent, force, the caller's answer)
_T = TypeVar("_T")


class WriterTasks:
    def __init__(
        self,
        agents: Callable[[], Mapping[str, AgentRuntime]],
        stop: threading.Event,
        wake: threading.Condition,
        jobs: queue.Queue[Job],
    ) -> None:
        self._agents = agents
        self._stop = stop
        self._wake = wake
        self.jobs = jobs

    # -- one pass -------------------------------------------------------------------

    def run_due(self, rt: AgentRuntime, now: float) -> float:
        """Everything due for ``rt`` now; returns how long until its next task."""
        plan = rt.schedule
        plan.rescan(
            now,
            rt.cfg.sync.rescanMs / 1000,
            memory_ok=not rt.health.failures["memory"],
            sessions_ok=not rt.health.failures["sessions"],
        )
        self._keep_writer_lock(rt, now)
        self._retry_when_the_index_path_changes(rt, now)
        if self._index_lost(rt):
            plan.backfill = True  # the writer opens it again; everything is read
        if plan.backfill:
            self._backfill(rt)
        if plan.take("memory", now):
            self._sync_memory(rt)
        if plan.take("sessions", now):
            self._sync_sessions(rt)
        if plan.take("embed", now):
            self.embed(rt)
        return plan.wait(time.monotonic())

    def _attempt(
        self,
        rt: AgentRuntime,
        task: str,
        work: Callable[[Callable[[], bool]], _T],
        retry: Callable[[float], None],
        what: str,
    ) -> _T | None:
        """``work(should_stop)`` as the writer's ``task``; on failure, record it,
        queue a rebuild if the index file is damaged, and ``retry(seconds)``."""
        try:
            with rt.health.working(task, self._stop) as stop:
                return work(stop)
        except Exception as exc:  # keep serving; status shows it; retried with backoff
            wait = rt.health.failed(task, exc)
            self._rebuild_if_damaged(rt, exc)
            retry(wait)
            log.exception("%s: %s failed (retry in %.0f s)", rt.cfg.agent_name, what, wait)
            return None

    # -- the tasks ----------------------------------------------------------------------

    def _keep_writer_lock(self, rt: AgentRuntime, now: float) -> None:
        """Take the agent's writer lock back as soon as it is lost (checked once a
        second; free while the lock's connection is quiet): a database restart ends
        the session that held it, and another daemon for the same agent must not
        take it in the time until this one next writes. If another one did, status
        says so (``errors.writer``) until this daemon has it again."""
        if now < rt.schedule.lock_check:
            return
        rt.schedule.lock_check = now + 1.0
        try:
            rt.writer.keep_lock()
        except Exception as exc:  # tried again every second: no back-off to lose it in
            first = not rt.health.errors["writer"]
            rt.health.failed("writer", exc)
            if first:
                log.error("%s: cannot hold the writer lock: %s", rt.cfg.agent_name, exc)
            return
        if rt.health.errors["writer"]:
            rt.health.succeeded("writer")
            log.info("%s: holds the writer lock again", rt.cfg.agent_name)

    def _index_lost(self, rt: AgentRuntime) -> bool:
        """The writer's index was deleted or replaced under it (someone cleared the
        state folder): it would go on writing into a file no search can open. Checked
        once a second (a ``stat``); not while a failed sync waits for its retry, which
        reopens the store itself (a database that is away must not be retried every
        second)."""
        if rt.schedule.backfill or rt.health.failures["memory"] or not rt.writer.store.broken():
            return False
        log.warning(
            "%s: lost its index %s (the file removed or replaced, or the connection "
            "lost): opening it again and syncing everything",
            rt.cfg.agent_name,
            rt.writer.backend.where,
        )
        return True

    def _retry_when_the_index_path_changes(self, rt: AgentRuntime, now: float) -> None:
        """While a failed sync waits for its retry, what is at the index path is
        looked at once a second (an ``lstat`` of the path and its folder): when it
        changed (the obstacle removed, the folder made again), the sync is tried at
        once instead of at the end of its back-off."""
        backend = rt.writer.backend
        path = getattr(backend, "index_path", None)
        if path is None or not rt.health.failures["memory"]:
            rt.schedule.index_seen = None
            return
        if now < rt.schedule.index_check:
            return
        rt.schedule.index_check = now + 1.0
        seen = (_lstat(path.parent), _lstat(path))
        if rt.schedule.index_seen is None:
            rt.schedule.index_seen = seen
        elif seen != rt.schedule.index_seen:
            rt.schedule.index_seen = None
            log.info("%s: the index path changed: trying the sync again now", rt.cfg.agent_name)
            rt.schedule.plan("memory", now)
            rt.schedule.plan("sessions", now)

    def _backfill(self, rt: AgentRuntime) -> None:
        def failed(wait: float) -> None:
            rt.schedule.backfill = False
            at = time.monotonic() + wait  # retried as a memory sync
            rt.schedule.plan("memory", at)
            rt.schedule.plan("sessions", at)

        rep = self._attempt(
            rt,
            "memory",
            lambda stop: rt.writer.sync(
                should_stop=stop,
                embed=False,
                sessions_budget_s=_SESSIONS_SLICE_S,
                progress=rt.progress,
            ),
            failed,
            "initial sync",
        )
        if rep is None:
            return
        rt.health.succeeded("memory")
        rt.health.left_behind("sessions", rt.writer.left_behind)
        rt.schedule.backfill = rep.stopped
        if (rep.sessions or {}).get("more"):  # the rest of the transcripts, in slices
            rt.schedule.sessions_all = rt.schedule.sessions_more = True
            rt.schedule.plan("sessions", time.monotonic())
        self.embed(rt)

    def embed(self, rt: AgentRuntime) -> None:
        """Vectors for new chunks, ``_EMBED_SLICE_S`` at a time (a backlog goes on in
        the next pass, after what else is due); open batch jobs are polled again
        later, so the writer never blocks on a job that may take hours."""
        if rt.provider is None:
            return

        def slice_(stop: Callable[[], bool]) -> Any:
            until = time.monotonic() + _EMBED_SLICE_S
            return rt.writer.embed(
                should_stop=lambda: stop() or time.monotonic() >= until,
                wait=False,
                progress=rt.progress,
            )

        def retry(wait: float) -> None:
            rt.schedule.plan("embed", time.monotonic() + wait)

        rep = self._attempt(rt, "embedding", slice_, retry, "embedding")
        if rep is None:
            return  # failed: retried later
        rt.health.succeeded("embedding")
        if rep.error:  # the provider failed; chunks stay pending
            wait = rt.health.failed("embedding", RuntimeError(rep.error))
            rt.schedule.plan("embed", time.monotonic() + wait)
        elif rep.batchJobs:
            rt.schedule.batch_polled(time.monotonic())
        else:
            rt.schedule.batch_done()
            if rep.pending and (rep.embedded or rep.cacheHits):
                rt.schedule.plan("embed", time.monotonic())  # the slice ran out: the rest next

    def _sync_memory(self, rt: AgentRuntime) -> None:
        def retry(wait: float) -> None:
            rt.schedule.plan("memory", time.monotonic() + wait)

        rep = self._attempt(
            rt, "memory", lambda stop: rt.writer.sync_memory(should_stop=stop), retry, "memory sync"
        )
        if rep is None:
            return
        if rep.stopped:
            return
        rt.health.succeeded("memory")
        log.debug("%s: synced memory (%s)", rt.cfg.agent_name, rep.to_json())
        self.embed(rt)

    def _sync_sessions(self, rt: AgentRuntime) -> None:
        def retry(wait: float) -> None:
            rt.schedule.plan("sessions", time.monotonic() + wait)

        rep = self._attempt(
            rt,
            "sessions",
            lambda stop: rt.writer.sync_sessions(
                due_only=not rt.schedule.sessions_all, should_stop=stop, budget_s=_SESSIONS_SLICE_S
            ),
            retry,
            "session sync",
        )
        if rep is None:
            return
        rt.health.left_behind("sessions", rt.writer.left_behind)
        plan = rt.schedule
        plan.sessions_more = rep.more
        plan.transcript_tails = rep.deferred
        if rep.more:  # a slice is done: memory files first, then the next one
            plan.plan("sessions", time.monotonic())
        else:
            plan.sessions_all = False
            if rep.deferred:  # below the thresholds: look again when idle flush may apply
                recheck = max(0.5, min(5.0, rt.cfg.sessions.idleFlushMs / 4000))
                plan.plan("sessions", time.monotonic() + recheck)
        if rep.chunksWritten:
            self.embed(rt)

    def _rebuild_if_damaged(self, rt: AgentRuntime, exc: BaseException) -> None:
        """A page of the index file failed to read (the file opened, so the writer's
        open did not set it aside): queue one forced rebuild, which builds a new
        generation from the files and publishes it."""
        if not index_damaged(exc) or rt.schedule.rebuild_queued:
            return
        rt.schedule.rebuild_queued = True
        log.warning("%s: the index file is damaged (%s): rebuilding it", rt.cfg.agent_name, exc)
        self.submit(rt.cfg.agent_name, True, Future())

    def rebuild_if_damaged(self, rt: AgentRuntime, exc: BaseException) -> None:
        """A request found the index file damaged: the same forced rebuild."""
        self._rebuild_if_damaged(rt, exc)

    # -- reindex requests ---------------------------------------------------------------

    def submit(self, agent: str, force: bool, fut: Future[ReindexResponse]) -> None:
        self.jobs.put((agent, force, fut))
        with self._wake:
            self._wake.notify_all()

    def run_jobs(self) -> None:
        while True:
            try:
                agent, force, fut = self.jobs.get_nowait()
            except queue.Empty:
                return
            rt = self._agents().get(agent)
            if rt is None:
                fut.set_exception(InvalidParams(f"unknown agent '{agent}'"))
                continue
            if force:
                rt.schedule.rebuild_queued = False
            try:
                with rt.health.working("memory", self._stop) as stop:
                    rep = rt.writer.sync(force=force, should_stop=stop, progress=rt.progress)
            except Exception as exc:  # the caller hears of it; retried as a memory sync
                rt.schedule.plan("memory", time.monotonic() + rt.health.failed("memory", exc))
                fut.set_exception(exc)
                continue
            deferred = (rep.sessions or {}).get("deferred")
            rt.schedule.transcript_tails = deferred if isinstance(deferred, int) else 0
            if not rep.stopped:
                rt.health.succeeded("memory")
                rt.health.left_behind("sessions", rt.writer.left_behind)
                if (rep.embedding or {}).get("error") is None:
                    rt.health.succeeded("embedding")
            answer = rep.to_json()
            answer["agent"] = agent
            answer["indexPath"] = str(rt.writer.backend.where)
            answer["providerState"] = rt.provider_state
            fut.set_result(answer)


def _lstat(path: Path) -> tuple[int, int, int] | None:
    """(mode, device, inode) of what is at ``path``, None for nothing (or unreadable)."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_mode, st.st_dev, st.st_ino)
