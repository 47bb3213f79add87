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
import queue
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from indexer import __version__, api
from indexer.config import Config, Settings
from indexer.errors import ConfigError, IndexBusy
from indexer.selection import SharedProviders
from indexer.sources.watcher import ObserverFactory, Watcher
from indexer.surfaces.agent import AgentRuntime
from indexer.surfaces.daemon_service import DaemonService, QmdHook
from indexer.surfaces.server import SocketServer
from indexer.surfaces.writer_tasks import WriterTasks

__all__ = ["Daemon"]

log = logging.getLogger(__name__)

_REFRESH_WATCHES_S = 30.0
_LOCK_WAIT_S = 5.0


class Daemon:
    def __init__(
        self,
        settings: Settings,
        *,
        socket_path: Path | None = None,
        reload: Callable[[], Settings] | None = None,
        observer_factory: ObserverFactory | None = None,
        qmd: QmdHook | None = None,
        idle_exit_s: float | None = None,
    ) -> None:
        """``qmd``: how ``qmd_search`` is answered (memindex-qmd's daemon only)."""
        from indexer.store.sqlite.connection import use_daemon_mmap

        use_daemon_mmap()  # its RSS: records.py
        self.settings = settings
        self.providers = SharedProviders()  # one loaded model for the agents that share it
        self.idle_exit_s = idle_exit_s
        self.last_request = time.monotonic()
        first = settings.agents[0]
        self.socket_path = socket_path or first.socket_path()
        self._reload_fn = reload
        self._stop = threading.Event()
        self._wake = threading.Condition()
        self.agents: dict[str, AgentRuntime] = {}
        self.tasks = WriterTasks(lambda: self.agents, self._stop, self._wake, queue.Queue())
        self.service = DaemonService(self, qmd)
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
        held = self.providers.select(cfg)  # kept across the retries: one model load
        try:
            while True:
                try:
                    return AgentRuntime(
                        cfg, note=f"memindex serve on {self.socket_path}", providers=self.providers
                    )
                except IndexBusy:
                    if time.monotonic() >= deadline or self._stop.is_set():
                        raise
                    time.sleep(0.25)
        finally:
            self.providers.release(held.provider)

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
        """Serve until SIGTERM/SIGINT; SIGHUP reloads the config. The handlers are
        in place before the socket is there: a reload sent as soon as the socket
        appeared killed the daemon (SIGHUP's default), leaving the socket file."""
        signal.signal(signal.SIGTERM, lambda *_: self._stop.set())
        signal.signal(signal.SIGINT, lambda *_: self._stop.set())
        if hasattr(signal, "SIGHUP"):
            signal.signal(signal.SIGHUP, lambda *_: self._request_reload())
        self.start()
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
        except Exception as exc:  # a reader's bug on some value: refused all the same
            self._reload_failed(f"the config could not be read ({type(exc).__name__}: {exc})")
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
                    replaced.append(rt)  # reopened below if what follows fails
                    rt.close()
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
        failing = rt.health.failures["sessions"] or rt.health.failures["memory"]
        debounce = rt.cfg.sync.watchDebounceMs / 1000
        rt.schedule.changed(kind, time.monotonic(), debounce, retrying=bool(failing))
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
            self.tasks.run_jobs()
            now = time.monotonic()
            wait = 1.0
            for rt in list(self.agents.values()):
                if self._stop.is_set():
                    break
                wait = min(wait, self.tasks.run_due(rt, now))
            if now >= next_refresh:
                next_refresh = now + _REFRESH_WATCHES_S
                self.watcher.request_refresh()  # done on the watcher's own thread
            with self._wake:
                if self.tasks.jobs.empty() and not self._reload_requested.is_set():
                    self._wake.wait(timeout=wait)

    # -- RPC ----------------------------------------------------------------------------

    def handle(self, method: str, params: dict[str, object]) -> Any:
        """One request from the socket: through the method table to this daemon's
        service."""
        self.last_request = time.monotonic()
        return api.dispatch(self.service, method, params)
