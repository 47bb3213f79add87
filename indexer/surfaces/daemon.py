"""``memindex serve``: the long-running process behind the Unix socket.

Threads: the accept loop and one thread per connection (server.py); the watchdog
observer (watcher.py); and one indexer thread, the only writer. Requests read through
a pool of read-only SQLite connections per agent, so a search never waits for
indexing (WAL). Watch events are debounced (``sync.watchDebounceMs``) and coalesced
per agent; transcript deltas are indexed once past ``sessions.deltaBytes`` /
``deltaMessages`` (or after ``idleFlushMs`` of quiet).

Signals: SIGTERM/SIGINT stop after the current transaction and remove the socket;
SIGHUP reloads the config file. Both finish within seconds under file churn: the
watcher's lock order (watcher.py) keeps the observer and the writer apart, and no
read in the writer can block (safefs).

Health is never reported better than it is: each task (memory sync, session sync,
embedding) keeps its own last error, cleared only by a success of that task; a
failed sync is retried with backoff and ``dirty`` stays true until one succeeds; and
the writer beats a heartbeat between files, so a task that makes no progress for
``health.STUCK_AFTER_S`` shows as ``stuck`` in ``status`` (and fails ``doctor``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from indexer import __version__, api
from indexer.config import Config, Settings
from indexer.errors import ConfigError, IndexBusy, InvalidParams, index_damaged
from indexer.openclaw import normalize_agent_id
from indexer.sources.watcher import ObserverFactory, Watcher
from indexer.surfaces.agent import AgentRuntime
from indexer.surfaces.rpc import METHOD_NOT_FOUND, RpcError
from indexer.surfaces.server import SocketServer

__all__ = ["Daemon"]

log = logging.getLogger(__name__)

_REFRESH_WATCHES_S = 30.0
_REINDEX_TIMEOUT_S = 3600.0
# Transcripts are read this long at a time: a large one is indexed in slices, with
# memory files, requests for a reindex and shutdown served in between.
_SESSIONS_SLICE_S = 1.0
_EMBED_SLICE_S = 2.0  # likewise, embedding a backlog
_LOCK_WAIT_S = 5.0


class Daemon:
    def __init__(
        self,
        settings: Settings,
        *,
        socket_path: Path | None = None,
        reload: Callable[[], Settings] | None = None,
        observer_factory: ObserverFactory | None = None,
        extra_methods: dict[str, Callable[[Daemon, dict[str, Any]], Any]] | None = None,
        idle_exit_s: float | None = None,
    ) -> None:
        self.settings = settings
        self.extra_methods = extra_methods or {}
        self.idle_exit_s = idle_exit_s
        self.last_request = time.monotonic()
        first = settings.agents[0]
        self.socket_path = socket_path or first.socket_path()
        self._reload_fn = reload
        self._stop = threading.Event()
        self._wake = threading.Condition()
        self._jobs: queue.Queue[tuple[str, bool, Future[dict[str, Any]]]] = queue.Queue()
        self.agents: dict[str, AgentRuntime] = {}
        self.started = time.time()
        self.watcher = Watcher(
            self._on_change,
            mode=first.sync.watcher,
            poll_interval=first.sync.pollIntervalMs / 1000,
            observer_factory=observer_factory,
        )
        self.server = SocketServer(
            self.socket_path,
            self.handle,
            max_request=first.server.maxRequestBytes,
            max_connections=first.server.maxConnections,
            idle_timeout=first.server.idleTimeoutMs / 1000,
            max_reply=first.server.maxReplyBytes,
        )
        self._indexer: threading.Thread | None = None
        self._reload_requested = threading.Event()
        self.reloads = 0  # completed config reloads (SIGHUP), shown by status
        self.reload_error: str | None = None  # why the last reload was refused
        self.loop_errors = 0  # unexpected errors the index loop survived

    # -- lifecycle -------------------------------------------------------------------

    def start(self) -> None:
        self.server.claim()  # a daemon already on this socket: say so before anything else
        try:
            for cfg in self.settings.agents:
                cfg.require_workspace()
                self.agents[cfg.agent_name] = self._runtime(cfg)
        except BaseException:
            for rt in self.agents.values():
                with contextlib.suppress(Exception):
                    rt.close()
            self.server.stop()
            raise
        self.server.start()
        self.watcher.start([a.cfg for a in self.agents.values()])
        self._indexer = threading.Thread(
            target=self._index_loop, name="memindex-indexer", daemon=True
        )
        self._indexer.start()

    def _runtime(self, cfg: Config) -> AgentRuntime:
        """The agent's runtime, holding its writer lock. A lock held by a daemon that
        was just killed is freed a moment later (its database session or file
        descriptor closes): a restart right after a crash waits up to
        ``_LOCK_WAIT_S`` for it before saying who holds it."""
        deadline = time.monotonic() + _LOCK_WAIT_S
        while True:
            try:
                return AgentRuntime(cfg, note=f"memindex serve on {self.socket_path}")
            except IndexBusy:
                if time.monotonic() >= deadline or self._stop.is_set():
                    raise
                time.sleep(0.25)

    def stop(self) -> None:
        self._stop.set()
        with self._wake:
            self._wake.notify_all()
        self.server.stop()
        self.watcher.stop()
        if self._indexer is not None:
            self._indexer.join(timeout=30)
            if self._indexer.is_alive():  # never hang the exit on a stuck writer
                log.error("the indexer thread did not stop within 30 s; exiting anyway")
                return
        for a in self.agents.values():
            a.close()

    def run(self) -> int:
        """Serve until SIGTERM/SIGINT; SIGHUP reloads the config."""
        self.start()
        signal.signal(signal.SIGTERM, lambda *_: self._stop.set())
        signal.signal(signal.SIGINT, lambda *_: self._stop.set())
        if hasattr(signal, "SIGHUP"):
            signal.signal(signal.SIGHUP, lambda *_: self._request_reload())
        log.info(
            "memindex %s serving %d agent(s) on %s", __version__, len(self.agents), self.socket_path
        )
        try:
            while not self._stop.wait(0.5):
                if self._indexer is not None and not self._indexer.is_alive():
                    log.critical("the indexer thread ended: exiting so the service restarts")
                    return 1
                idle = time.monotonic() - self.last_request
                if self.idle_exit_s is not None and idle > self.idle_exit_s:
                    log.info("no request for %.0f s: exiting", idle)
                    break
        finally:
            self.stop()
        return 0

    def _request_reload(self) -> None:
        self._reload_requested.set()
        with self._wake:
            self._wake.notify_all()

    def _reload(self) -> None:
        """All or nothing: a config that cannot be served (a bad file, an index path
        that cannot be created) leaves the daemon on the old one, with
        ``reloadError`` in ``status`` saying why. An agent whose settings changed is
        closed before it is opened again (an index has one writer), and reopened
        with its old settings if the reload fails."""
        if self._reload_fn is None:
            return
        try:
            new = self._reload_fn()
        except ConfigError as exc:
            self._reload_failed(exc.message)
            return
        old = self.agents
        fresh: dict[str, AgentRuntime] = {}
        made: list[AgentRuntime] = []
        replaced: list[AgentRuntime] = []  # closed first: an index has one writer
        try:
            for cfg in new.agents:
                rt = old.get(cfg.agent_name)
                if rt is not None and rt.cfg == cfg:
                    fresh[cfg.agent_name] = rt
                    continue
                cfg.require_workspace()
                if rt is not None:
                    rt.close()
                    replaced.append(rt)
                made.append(self._runtime(cfg))
                fresh[cfg.agent_name] = made[-1]
        except Exception as exc:
            why = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
            for rt in made:
                with contextlib.suppress(Exception):
                    rt.close()
            for rt in replaced:  # back to the old config
                try:
                    old[rt.cfg.agent_name] = self._runtime(rt.cfg)
                except Exception as again:
                    del old[rt.cfg.agent_name]
                    why += f"; agent {rt.cfg.agent_name} could not be reopened: {again}"
            self._reload_failed(why)
            return
        for name, rt in old.items():
            if fresh.get(name) is not rt and rt not in replaced:
                rt.close()
        self.settings = new
        self.agents = fresh
        self.watcher.stop()
        self.watcher.start([a.cfg for a in fresh.values()])
        self.reloads += 1
        self.reload_error = None
        log.info("config reloaded: %d agent(s)", len(fresh))

    def _reload_failed(self, why: str) -> None:
        self.reload_error = why
        log.error("config reload failed, keeping the old config: %s", why)

    # -- watcher -> indexer ------------------------------------------------------------

    def _on_change(self, agent: str, kind: str, path: str) -> None:
        rt = self.agents.get(agent)
        if rt is None:
            return
        now = time.monotonic()
        debounce = rt.cfg.sync.watchDebounceMs / 1000
        if kind == "memory":
            if rt.memory_first is None:
                rt.memory_first = now
            # Trailing debounce, but never later than 4 debounce periods after the
            # first event, so a file written every second still gets indexed.
            rt.memory_due = min(now + debounce, rt.memory_first + 4 * debounce)
        else:
            if rt.sessions_due is None:
                rt.sessions_due = now + debounce
        with self._wake:
            self._wake.notify_all()

    def _index_loop(self) -> None:
        """The writer's loop. An error no task handled is logged and the loop goes
        on after a pause: this thread ending would leave a daemon that answers but
        never indexes again (``run`` exits if it ends anyway)."""
        while not self._stop.is_set():
            try:
                self._index_loop_once_more()
            except Exception:
                self.loop_errors += 1
                log.exception("the index loop failed; going on in 1 s")
                self._stop.wait(1.0)

    def _index_loop_once_more(self) -> None:
        next_refresh = time.monotonic() + _REFRESH_WATCHES_S
        while not self._stop.is_set():
            if self._reload_requested.is_set():
                self._reload_requested.clear()
                self._reload()
            self._run_jobs()
            now = time.monotonic()
            wait = 1.0
            for rt in list(self.agents.values()):
                if self._stop.is_set():
                    break
                self._rescan_if_due(rt, now)
                self._keep_writer_lock(rt, now)
                if self._index_lost(rt):
                    rt.backfill = True  # the writer opens it again; everything is read
                if rt.backfill:
                    self._backfill(rt)
                if rt.memory_due is not None and rt.memory_due <= now:
                    rt.memory_due = rt.memory_first = None
                    self._sync_memory(rt)
                if rt.sessions_due is not None and rt.sessions_due <= now:
                    rt.sessions_due = None
                    self._sync_sessions(rt)
                if rt.embed_due is not None and rt.embed_due <= now:
                    rt.embed_due = None
                    self._embed(rt)
                for due in (rt.memory_due, rt.sessions_due, rt.embed_due):
                    if due is not None:
                        wait = min(wait, max(0.0, due - time.monotonic()))
            if now >= next_refresh:
                next_refresh = now + _REFRESH_WATCHES_S
                self.watcher.request_refresh()  # done on the watcher's own thread
            with self._wake:
                if self._jobs.empty() and not self._reload_requested.is_set():
                    self._wake.wait(timeout=wait)

    def _rescan_if_due(self, rt: AgentRuntime, now: float) -> None:
        """A memory and transcript sync every ``sync.rescanMs`` even if no event came:
        the watcher can miss changes for good (the kernel drops inotify events when
        its queue overflows, and watchdog tells no handler; a network file system
        sends none). Unchanged files cost a ``stat`` each. A task waiting for its
        retry after a failure keeps its back-off."""
        every = rt.cfg.sync.rescanMs / 1000
        if not every:
            return
        if rt.next_rescan is None or rt.memory_due is not None:
            rt.next_rescan = now + every  # a sync is coming anyway: count from there
            return
        if now < rt.next_rescan:
            return
        rt.next_rescan = now + every
        if not rt.health.failures["memory"]:
            rt.memory_due = now
        if rt.sessions_due is None and not rt.health.failures["sessions"]:
            rt.sessions_due = now

    def _keep_writer_lock(self, rt: AgentRuntime, now: float) -> None:
        """Take the agent's writer lock back as soon as it is lost (checked once a
        second; free while the lock's connection is quiet): a database restart ends
        the session that held it, and another daemon for the same agent must not
        take it in the time until this one next writes. If another one did, status
        says so (``errors.writer``) until this daemon has it again."""
        if now < rt.lock_check:
            return
        rt.lock_check = now + 1.0
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
        state folder): it would go on writing into a file no search can open, and
        every search would say "run 'memindex index' first". Checked once a second
        (a ``stat``); not while a failed sync waits for its retry, which reopens the
        store itself (a database that is away must not be retried every second)."""
        if rt.backfill or rt.health.failures["memory"] or not rt.writer.store.broken():
            return False
        log.warning(
            "%s: lost its index %s (the file removed or replaced, or the connection "
            "lost): opening it again and syncing everything",
            rt.cfg.agent_name,
            rt.writer.backend.where,
        )
        return True

    def _backfill(self, rt: AgentRuntime) -> None:
        try:
            with rt.health.working("memory", self._stop) as stop:
                rep = rt.writer.sync(
                    should_stop=stop, embed=False, sessions_budget_s=_SESSIONS_SLICE_S
                )
            rt.last_report = rep.to_json()
            rt.health.succeeded("memory")
            rt.health.succeeded("sessions")
            rt.backfill = rep.stopped
            if (rep.sessions or {}).get("more"):  # the rest of the transcripts, in slices
                rt.sessions_all = rt.sessions_more = True
                rt.sessions_due = time.monotonic()
            self._embed(rt)
        except Exception as exc:
            wait = self._task_failed(rt, "memory", exc)
            rt.backfill = False
            rt.memory_due = time.monotonic() + wait  # retried as a memory sync
            rt.sessions_due = rt.memory_due
            log.exception("%s: initial sync failed (retry in %.0f s)", rt.cfg.agent_name, wait)

    def _embed(self, rt: AgentRuntime) -> None:
        """Vectors for new chunks, ``_EMBED_SLICE_S`` at a time (a backlog goes on in
        the next pass, after what else is due); open batch jobs are polled again
        later, so the writer never blocks on a job that may take hours."""
        if rt.provider is None:
            return
        try:
            with rt.health.working("embedding", self._stop) as stop:
                until = time.monotonic() + _EMBED_SLICE_S
                rep = rt.writer.embed(
                    should_stop=lambda: stop() or time.monotonic() >= until, wait=False
                )
            rt.health.succeeded("embedding")
        except Exception as exc:
            wait = self._task_failed(rt, "embedding", exc)
            rt.embed_due = time.monotonic() + wait
            log.exception("%s: embedding failed (retry in %.0f s)", rt.cfg.agent_name, wait)
            return
        if rep and rep.get("error"):  # the provider failed; chunks stay pending
            wait = rt.health.failed("embedding", RuntimeError(str(rep["error"])))
            rt.embed_due = time.monotonic() + wait
        elif rep and rep.get("batchJobs"):
            rt.embed_poll = min(60.0, max(1.0, rt.embed_poll * 2))
            rt.embed_due = time.monotonic() + rt.embed_poll
        else:
            rt.embed_poll = 0.5
            if rep and rep.get("pending") and (rep.get("embedded") or rep.get("cacheHits")):
                rt.embed_due = time.monotonic()  # the slice ran out: the rest next

    def _sync_memory(self, rt: AgentRuntime) -> None:
        try:
            with rt.health.working("memory", self._stop) as stop:
                rep = rt.writer.sync_memory(should_stop=stop)
            rt.last_report = rep.to_json()
            if rep.stopped:
                return
            rt.health.succeeded("memory")
            log.debug("%s: synced memory (%s)", rt.cfg.agent_name, rt.last_report)
        except Exception as exc:  # keep serving; status shows it; retried with backoff
            wait = self._task_failed(rt, "memory", exc)
            rt.memory_due = time.monotonic() + wait
            log.exception("%s: memory sync failed (retry in %.0f s)", rt.cfg.agent_name, wait)
            return
        self._embed(rt)

    def _sync_sessions(self, rt: AgentRuntime) -> None:
        try:
            with rt.health.working("sessions", self._stop) as stop:
                rep = rt.writer.sync_sessions(
                    due_only=not rt.sessions_all, should_stop=stop, budget_s=_SESSIONS_SLICE_S
                )
            rt.health.succeeded("sessions")
        except Exception as exc:
            wait = self._task_failed(rt, "sessions", exc)
            rt.sessions_due = time.monotonic() + wait
            log.exception("%s: session sync failed (retry in %.0f s)", rt.cfg.agent_name, wait)
            return
        rt.sessions_more = rep.more
        if rep.more:  # a slice is done: memory files first, then the next one
            rt.sessions_due = time.monotonic()
        else:
            rt.sessions_all = False
            if rep.deferred:  # below the thresholds: look again when idle flush may apply
                rt.sessions_due = time.monotonic() + max(
                    0.5, min(5.0, rt.cfg.sessions.idleFlushMs / 4000)
                )
        if rep.chunksWritten:
            self._embed(rt)

    def _task_failed(self, rt: AgentRuntime, task: str, exc: BaseException) -> float:
        """A writer task failed: record it (``status`` shows it until the task
        succeeds), queue a rebuild if the index file is damaged, and return how long
        to wait before retrying."""
        wait = rt.health.failed(task, exc)
        self._rebuild_if_damaged(rt, exc)
        return wait

    def _rebuild_if_damaged(self, rt: AgentRuntime, exc: BaseException) -> None:
        """A page of the index file failed to read (the file opened, so the writer's
        open did not set it aside): queue one forced rebuild, which builds a new
        generation from the files and publishes it."""
        if not index_damaged(exc) or rt.rebuild_queued:
            return
        rt.rebuild_queued = True
        log.warning("%s: the index file is damaged (%s): rebuilding it", rt.cfg.agent_name, exc)
        self._jobs.put((rt.cfg.agent_name, True, Future()))
        with self._wake:
            self._wake.notify_all()

    def _run_jobs(self) -> None:
        while True:
            try:
                agent, force, fut = self._jobs.get_nowait()
            except queue.Empty:
                return
            rt = self.agents.get(agent)
            if rt is None:
                fut.set_exception(InvalidParams(f"unknown agent '{agent}'"))
                continue
            if force:
                rt.rebuild_queued = False
            try:
                with rt.health.working("memory", self._stop) as stop:
                    rep = rt.writer.sync(force=force, should_stop=stop)
                rt.last_report = rep.to_json()
                if not rep.stopped:
                    rt.health.succeeded("memory")
                    rt.health.succeeded("sessions")
                    if (rep.embedding or {}).get("error") is None:
                        rt.health.succeeded("embedding")
                fut.set_result(
                    {"agent": agent, **rep.to_json(), "providerState": rt.provider_state}
                )
            except Exception as exc:
                rt.memory_due = time.monotonic() + rt.health.failed("memory", exc)  # retried
                fut.set_exception(exc)

    # -- RPC ----------------------------------------------------------------------------

    def _agent(self, params: dict[str, Any]) -> AgentRuntime:
        name = params.get("agent")
        if name is None:
            return next(iter(self.agents.values()))
        if not isinstance(name, str):
            raise InvalidParams("'agent' must be a string")
        rt = self.agents.get(name) or self.agents.get(normalize_agent_id(name))
        if rt is None:
            raise InvalidParams(f"unknown agent '{name}' (serving: {', '.join(self.agents)})")
        return rt

    def handle(self, method: str, params: dict[str, Any]) -> Any:
        self.last_request = time.monotonic()
        if method in self.extra_methods:
            return self.extra_methods[method](self, params)
        if method not in api.METHODS:
            raise RpcError(
                METHOD_NOT_FOUND, f"unknown method '{method}'", {"methods": list(api.METHODS)}
            )
        req = api.parse(method, params)
        if isinstance(req, api.PingRequest):
            return {
                "ok": True,
                "version": __version__,
                "agents": {n: a.writer.backend.where for n, a in self.agents.items()},
            }
        rt = self._agent(params)
        if isinstance(req, api.ReindexRequest):
            fut: Future[dict[str, Any]] = Future()
            self._jobs.put((rt.cfg.agent_name, req.force, fut))
            with self._wake:
                self._wake.notify_all()
            return fut.result(timeout=_REINDEX_TIMEOUT_S)
        try:
            answer = rt.answer(req)
        except Exception as exc:
            self._rebuild_if_damaged(rt, exc)
            raise
        if isinstance(req, api.StatusRequest):
            st: dict[str, Any] = dict(answer)
            st["agent"] = rt.cfg.agent_name
            st["agents"] = list(self.agents)
            st["daemon"] = {
                "pid": os.getpid(),
                "uptimeS": round(time.time() - self.started, 1),
                "socket": str(self.socket_path),
                "watcher": self.watcher.status(),
                "refusedConnections": self.server.refused,
                "evictedConnections": self.server.evicted,
                "reloads": self.reloads,
                "reloadError": self.reload_error,
                "loopErrors": self.loop_errors,
            }
            st.update(rt.report_health())
            if st.get("mismatch"):  # not this daemon's index: never "all is well"
                st["dirty"] = True
                st["lastError"] = st.get("lastError") or st["mismatch"]
            return st
        return answer
