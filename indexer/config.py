"""Configuration types: one immutable ``Config`` per agent, its sections, and
``Settings`` (every agent a daemon serves). Read by ``config_file.py``.

Key names follow OpenClaw's ``memorySearch`` settings where they overlap; every key
and its default is listed in ``config/memindex.toml``. Unknown keys are an error
(a typo must not silently fall back to a default).
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from indexer.errors import ConfigError, WorkspaceError

__all__ = [
    "ServerConfig",
    "SessionsConfig",
    "Settings",
    "SyncConfig",
    "ChunkingConfig",
    "Config",
    "ExtraPath",
    "LimitsConfig",
    "QueryConfig",
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
class ChunkingConfig:
    tokens: int = 400
    overlap: int = 80


@dataclass(frozen=True)
class QueryConfig:
    maxResults: int = 6
    minScore: float = 0.35
    maxSnippetChars: int = 700
    memoryShare: float = 0.5  # slots kept for memory files against transcripts
    temporalDecay: bool = False
    halfLifeDays: float = 30.0
    mmr: bool = False
    mmrLambda: float = 0.7
    # A dated daily log inside a period the query names ("in March 2026") ranks as
    # if 1 + dateBoost times stronger; 0: off (docs/RETRIEVAL.md, "Dates").
    dateBoost: float = 0.5
    # abstain: true answers with no results when the query's relevance signal
    # (docs/RETRIEVAL.md, "Abstention") is below this.
    abstainBelow: float = 0.3


@dataclass(frozen=True)
class LimitsConfig:
    maxFileBytes: int = 8 * 1024 * 1024
    maxGetBytes: int = 1024 * 1024  # memory_get returns at most this much text
    allowHardLinks: bool = False  # index and serve files that have more than one name


@dataclass(frozen=True)
class SessionsConfig:
    enabled: bool = True
    dir: str = ""  # default ~/.openclaw/agents/<agent>/sessions
    deltaBytes: int = 100_000
    deltaMessages: int = 50
    idleFlushMs: int = 60_000  # index a smaller delta once the file has been quiet this long
    includeRotated: bool = True  # *.jsonl.reset.* and *.jsonl.deleted.*
    # OpenClaw 2026.9+: the agent's database (default <dir>/../agent/openclaw-agent.sqlite)
    database: str = ""


@dataclass(frozen=True)
class LocalProviderConfig:
    modelPath: str = ""  # a .gguf file or hf:<owner>/<repo>/<file>.gguf
    modelCacheDir: str = ""  # default $XDG_CACHE_HOME/memindex/models (~/.cache/...)
    threads: int = 0  # 0 = all cores
    queryPrefix: str = ""  # put before a query ("" = the model file's own, if any)
    documentPrefix: str = ""  # put before a chunk ("" = the model file's own, if any)


@dataclass(frozen=True)
class RemoteProviderConfig:
    baseUrl: str = ""
    apiKey: str = ""  # prefer the environment variables
    timeoutMs: int = 60_000
    queryTimeoutMs: int = 5_000  # a search waits this long for its query vector
    batch: bool = False  # use the provider's batch API (cheaper, slower) for indexing
    batchTimeoutMs: int = 3_600_000  # `memindex index` waits this long for batch jobs


@dataclass(frozen=True)
class ProviderConfig:
    name: str = "auto"  # auto | local | openai | gemini | voyage | none
    fallback: str = "none"  # used when the provider above cannot be built
    model: str = ""
    dims: int = 0
    local: LocalProviderConfig = field(default_factory=LocalProviderConfig)
    remote: RemoteProviderConfig = field(default_factory=RemoteProviderConfig)


@dataclass(frozen=True)
class HybridConfig:
    enabled: bool = True
    # Measured (bench/eval.py, local MiniLM, docs/RETRIEVAL.md): with both sides
    # scaled per query, 0.3/0.7 gave SciFact-dev nDCG@10 0.725 and LoCoMo-dev
    # recall@10 0.879 / MRR@10 0.750, ahead of 0.2/0.8, 0.4/0.6, 0.5/0.5 and RRF.
    vectorWeight: float = 0.3
    textWeight: float = 0.7
    candidateMultiplier: int = 4
    fusion: str = "weighted"  # weighted | rrf
    rrfK: int = 60


@dataclass(frozen=True)
class RerankConfig:
    """A second opinion on the fused candidates (off unless ``provider`` is set)."""

    provider: str = ""  # "" (off) | voyage | http (Jina/Cohere/TEI/llama.cpp /rerank) | local
    model: str = ""  # voyage: rerank-2.5; http: the server's model; local: a .gguf path
    baseUrl: str = ""  # voyage: https://api.voyageai.com/v1; http: required (POST <baseUrl>/rerank)
    apiKey: str = ""  # prefer VOYAGE_API_KEY / MEMINDEX_RERANK_API_KEY
    candidates: int = 40  # the best this many fused candidates are reranked
    blend: str = "rank"  # rank (by fused position) | fixed (weight)
    weight: float = 0.6  # fixed blend: weight x rerank + (1 - weight) x fused
    timeoutMs: int = 3_000  # then the fused order, with a fallback reason
    maxChars: int = 4_000  # of each chunk sent
    cacheEntries: int = 20_000  # rerank scores kept per process


@dataclass(frozen=True)
class CacheConfig:
    maxEntries: int = 50_000


@dataclass(frozen=True)
class SyncConfig:
    watchDebounceMs: int = 1500
    watcher: str = "auto"  # auto | inotify | polling
    pollIntervalMs: int = 2000
    rescanMs: int = 300_000  # the daemon syncs this often even with no event; 0: never


@dataclass(frozen=True)
class ServerConfig:
    socket: str = ""  # default $XDG_RUNTIME_DIR/memindex.sock, else <stateDir>/memindex.sock
    maxRequestBytes: int = 1024 * 1024
    maxReplyBytes: int = 16 * 1024 * 1024  # one reply (and one batch's replies) at most
    maxConnections: int = 256
    idleTimeoutMs: int = 300_000


@dataclass(frozen=True)
class StoreConfig:
    url: str = ""  # postgresql://...: the shared database (else MEMINDEX_DATABASE_URL, else SQLite)
    readUrl: str = ""  # a replica that serves searches (writes always go to ``url``)
    poolSize: int = 10  # connections per agent and process


@dataclass(frozen=True)
class Config:
    workspace: Path | None = None
    agentId: str | None = None
    stateDir: Path | None = None
    indexPath: Path | None = None
    extraPaths: tuple[ExtraPath, ...] = ()
    ignore: tuple[str, ...] = ()
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
        ws = self.workspace.resolve()
        digest = hashlib.sha256(str(ws).encode("utf-8")).hexdigest()[:12]
        return f"ws-{ws.name or 'root'}-{digest}"

    def _openclaw_workspace(self) -> bool:
        own = Path.home() / ".openclaw" / "workspace"
        return self.workspace is not None and self.workspace.resolve() == own.resolve()

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
        runtime = os.environ.get("XDG_RUNTIME_DIR")
        if runtime and Path(runtime).is_dir():
            return Path(runtime) / "memindex.sock"
        return (self.stateDir or state_dir()) / "memindex.sock"

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
        ws = self.workspace.resolve()
        digest = hashlib.sha256(str(ws).encode("utf-8")).hexdigest()[:12]
        return (self.stateDir or state_dir()) / f"ws-{ws.name or 'root'}-{digest}.sqlite"


def state_dir() -> Path:
    """Platform state dir: $XDG_STATE_HOME/memindex or ~/.local/state/memindex
    (macOS: ~/Library/Application Support/memindex)."""
    xdg = os.environ.get("XDG_STATE_HOME")
    if xdg:
        return Path(xdg) / "memindex"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "memindex"
    return Path.home() / ".local" / "state" / "memindex"


def default_config_path() -> Path:
    xdg = os.environ.get("XDG_CONFIG_HOME")
    base = Path(xdg) if xdg else Path.home() / ".config"
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
