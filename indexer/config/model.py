"""Configuration types: one immutable ``Config`` per agent, its sections, and
``Settings`` (every agent a daemon serves). Read by ``config/file.py``.

The sections and every key's default, range and meaning are in
``config.sections`` (the one schema; ``config/memindex.toml`` and docs/CONFIG.md's table
are written from it). Unknown keys are an error (a typo must not silently fall back
to a default).
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from indexer.config.schema import setting
from indexer.config.sections import (
    CacheConfig,
    ChunkingConfig,
    HybridConfig,
    LimitsConfig,
    LocalProviderConfig,
    ProviderConfig,
    QueryConfig,
    RemoteProviderConfig,
    RerankConfig,
    ServerConfig,
    SessionsConfig,
    StoreConfig,
    SyncConfig,
)
from indexer.config.stages import StagesConfig
from indexer.errors import ConfigError, WorkspaceError

__all__ = [
    "CacheConfig",
    "ChunkingConfig",
    "Config",
    "ExtraPath",
    "HybridConfig",
    "LimitsConfig",
    "LocalProviderConfig",
    "ProviderConfig",
    "QueryConfig",
    "RemoteProviderConfig",
    "RerankConfig",
    "ServerConfig",
    "SessionsConfig",
    "StagesConfig",
    "Settings",
    "StoreConfig",
    "SyncConfig",
    "default_config_path",
    "state_dir",
]

DEFAULT_IGNORE_DIRS = (
    ".git",
    "node_modules",
    ".pnpm-store",
    ".venv",
    "venv",
    ".tox",
    "__pycache__",
)


@dataclass(frozen=True)
class ExtraPath:
    """A file, a directory (walked recursively) or a directory + glob pattern."""

    path: Path
    pattern: str | None = None


@dataclass(frozen=True)
class Config:
    """One agent's settings, every section resolved (``load_config``)."""

    workspace: Path | None = setting(
        None,
        "the agent workspace holding MEMORY.md / memory.md / USER.md / memory/**/*.md; "
        "default --workspace, else ~/.openclaw/workspace when it exists",
        example='"~/.openclaw/workspace"',
    )
    agentId: str | None = setting(
        None,
        "names the index file <stateDir>/<agentId>.sqlite; without it the name comes from "
        "the workspace (main for ~/.openclaw/workspace), so two workspaces never share one",
        example='"main"',
    )
    stateDir: Path | None = setting(
        None,
        "where index files live; default $XDG_STATE_HOME/memindex or ~/.local/state/memindex "
        "(macOS: ~/Library/Application Support/memindex)",
        example='"~/.local/state/memindex"',
    )
    indexPath: Path | None = setting(
        None,
        "an explicit index file (overrides stateDir/agentId)",
        example='"/path/to/index.sqlite"',
    )
    extraPaths: tuple[ExtraPath, ...] = setting(
        (),
        "more Markdown: files, directories (walked recursively), or {path, pattern} with a "
        "glob relative to path; outside the workspace they appear as extra/<name>/<rel> "
        "(two of one name: extra/<name>-2/..., in the order of their real paths)",
        example='["~/notes", "~/projects/plan.md", { path = "~/wiki", pattern = "**/*.md" }]',
    )
    ignore: tuple[str, ...] = setting(
        (),
        "more names or relative-path globs to skip, on top of the built-in "
        + ", ".join(DEFAULT_IGNORE_DIRS),
    )
    chunking: ChunkingConfig = field(default_factory=ChunkingConfig)
    query: QueryConfig = field(default_factory=QueryConfig)
    limits: LimitsConfig = field(default_factory=LimitsConfig)
    sessions: SessionsConfig = field(default_factory=SessionsConfig)
    sync: SyncConfig = field(default_factory=SyncConfig)
    server: ServerConfig = field(default_factory=ServerConfig)
    provider: ProviderConfig = field(default_factory=ProviderConfig)
    hybrid: HybridConfig = field(default_factory=HybridConfig)
    rerank: RerankConfig = field(default_factory=RerankConfig)
    cache: CacheConfig = field(default_factory=CacheConfig)
    store: StoreConfig = field(default_factory=StoreConfig)
    source: Path | None = None  # the file this came from, if any

    @property
    def agent_name(self) -> str:
        """The agent id: ``agentId``; else "main" for OpenClaw's own workspace (its
        default agent); else a name made from the workspace (``ws-<folder>-<hash>``),
        which is also the index file's name, so ``--agent <that>`` and the workspace
        name the same index everywhere."""
        if self.agentId:
            return self.agentId
        if self.workspace is None or self._openclaw_workspace():
            return "main"
        ws = _resolved(self.workspace)
        digest = hashlib.sha256(str(ws).encode("utf-8")).hexdigest()[:12]
        return f"ws-{ws.name or 'root'}-{digest}"

    def _openclaw_workspace(self) -> bool:
        own = Path.home() / ".openclaw" / "workspace"
        return self.workspace is not None and _resolved(self.workspace) == _resolved(own)

    def sessions_dir(self) -> Path | None:
        """The transcripts folder, or None when there is none to index.

        ``sessions.dir`` if set; else OpenClaw's folder for this agent, but only when
        an agent id is given or the workspace is OpenClaw's own: indexing some other
        folder of notes must not pull in OpenClaw's transcripts."""
        if not self.sessions.enabled:
            return None
        if self.sessions.dir:
            return Path(os.path.expandvars(os.path.expanduser(self.sessions.dir)))
        if self.agentId is None and not self._openclaw_workspace():
            return None
        return Path.home() / ".openclaw" / "agents" / self.agent_name / "sessions"

    def transcripts_note(self) -> str | None:
        """Why this config indexes no transcripts (None: it has a place to read them
        from, and one of them is there)."""
        if not self.sessions.enabled:
            return "off (sessions.enabled = false)"
        sdir = self.sessions_dir()
        if sdir is None:
            return (
                "none: this workspace is not an OpenClaw agent's (not ~/.openclaw/workspace, "
                "not named in OpenClaw's openclaw.json) and sessions.dir is not set; set "
                "[sessions] dir, or pass --agent ID or --openclaw-config FILE "
                "(docs/TRANSCRIPTS.md)"
            )
        db = self.transcript_db()
        if not sdir.is_dir() and not (db is not None and db.is_file()):
            where = f"{sdir}" + (f" nor {db}" if db is not None else "")
            return f"none found yet: neither {where} exists (has OpenClaw run this agent?)"
        return None

    def transcript_db(self) -> Path | None:
        """OpenClaw's agent database, whose ``transcript_events`` hold the transcripts
        of OpenClaw 2026.9 and later: ``sessions.database``, else the ``agent`` folder
        beside an OpenClaw sessions folder (``agents/<id>/sessions``); None when
        transcripts are off or the sessions folder is not laid out as OpenClaw's."""
        sdir = self.sessions_dir()
        if sdir is None:
            return None
        if self.sessions.database:
            return Path(os.path.expandvars(os.path.expanduser(self.sessions.database)))
        if sdir.name != "sessions" or sdir.parent.parent.name != "agents":
            return None
        return sdir.parent / "agent" / "openclaw-agent.sqlite"

    def socket_path(self) -> Path:
        if self.server.socket:
            return Path(os.path.expandvars(os.path.expanduser(self.server.socket)))
        return socket_dir(self.stateDir) / "memindex.sock"

    def require_workspace(self) -> Path:
        if self.workspace is None:
            raise WorkspaceError(
                "no workspace: pass --workspace DIR, set 'workspace' in the config file, "
                "or create ~/.openclaw/workspace"
            )
        if not self.workspace.is_dir():
            what = "does not exist" if not self.workspace.exists() else "is not a directory"
            raise WorkspaceError(
                f"workspace {self.workspace} {what}: --workspace (or 'workspace' in the "
                "config) names the folder that holds MEMORY.md and memory/"
            )
        return self.workspace

    def database_url(self) -> str:
        """The PostgreSQL URL the index lives in (``[store] url``, else
        ``MEMINDEX_DATABASE_URL``), or "" for the SQLite file."""
        return self.store.url or os.environ.get("MEMINDEX_DATABASE_URL", "")

    def index_location(self) -> str:
        """Where the agent's index is, as the daemon reports it (``ping``): the index
        file, or the database (its password hidden) and the agent."""
        url = self.database_url()
        if url:
            return database_location(url, self.agent_name)
        return str(self.resolved_index_path())

    def resolved_index_path(self) -> Path:
        """``indexPath``, else ``<stateDir>/<agent name>.sqlite`` (``agent_name``: an
        agent id, or a name made from the workspace, so two workspaces never share
        an index file)."""
        if self.indexPath is not None:
            return self.indexPath
        if self.agentId is None:
            self.require_workspace()
        return (self.stateDir or state_dir()) / f"{self.agent_name}.sqlite"

    def legacy_index_path(self) -> Path | None:
        """Where memindex before 0.2 kept the index of OpenClaw's own workspace with no
        agent id (named after the workspace); now it is ``main.sqlite``."""
        if self.indexPath is not None or self.agentId or not self._openclaw_workspace():
            return None
        assert self.workspace is not None
        ws = _resolved(self.workspace)
        digest = hashlib.sha256(str(ws).encode("utf-8")).hexdigest()[:12]
        return (self.stateDir or state_dir()) / f"ws-{ws.name or 'root'}-{digest}.sqlite"


def _resolved(path: Path) -> Path:
    """``path.resolve()``; a loop of links as its absolute path (it names no folder:
    the workspace check says so, not a RuntimeError of every command)."""
    try:
        return path.resolve()
    except RuntimeError:
        return Path(os.path.abspath(path))


def _xdg(name: str) -> Path | None:
    """An XDG base directory from the environment; a relative one is ignored, as
    the XDG spec says (it would put state wherever the process happens to run)."""
    value = os.environ.get(name, "")
    return Path(value) if value and os.path.isabs(value) else None


def socket_dir(state: Path | None = None) -> Path:
    """Where a daemon's socket goes by default: $XDG_RUNTIME_DIR, else the state dir."""
    runtime = _xdg("XDG_RUNTIME_DIR")
    if runtime and runtime.is_dir():
        return runtime
    return state or state_dir()


def state_dir() -> Path:
    """Platform state dir: $XDG_STATE_HOME/memindex or ~/.local/state/memindex
    (macOS: ~/Library/Application Support/memindex)."""
    xdg = _xdg("XDG_STATE_HOME")
    if xdg:
        return xdg / "memindex"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "memindex"
    return Path.home() / ".local" / "state" / "memindex"


def default_config_path() -> Path:
    base = _xdg("XDG_CONFIG_HOME") or Path.home() / ".config"
    return base / "memindex" / "config.toml"


def redact_url(url: str) -> str:
    """A database URL without its password (for messages and status)."""
    return re.sub(r"(://[^:/@]*):[^@/]*@", r"\1:***@", url)


def is_database_url(value: str) -> bool:
    """Whether ``value`` names a PostgreSQL database (``[store] url``, ``--to``)."""
    return value.startswith(("postgresql://", "postgres://"))


def database_location(url: str, agent: str) -> str:
    """An agent's index in a database, as messages, ``status`` and ``ping`` name it."""
    return f"{redact_url(url)} (agent {agent})"


@dataclass(frozen=True)
class Settings:
    """Everything the daemon serves: one Config per agent (the first is the default)."""

    agents: tuple[Config, ...]

    def agent(self, agent_id: str | None) -> Config:
        if agent_id is None:
            return self.agents[0]
        for a in self.agents:
            if a.agent_name == agent_id:
                return a
        known = ", ".join(a.agent_name for a in self.agents)
        raise ConfigError(f"unknown agent '{agent_id}' (configured: {known})")
