"""The protocol's answers: one shape per method, as JSON objects (``TypedDict``)."""

from __future__ import annotations

from typing import NotRequired, TypedDict

from providers.state import ProviderState

__all__ = [
    "BatchJob",
    "Citation",
    "DaemonInfo",
    "LastSync",
    "Recovered",
    "WatcherState",
    "GetResponse",
    "PingResponse",
    "ProviderState",
    "QmdResult",
    "ReindexResponse",
    "SearchResponse",
    "SearchResult",
    "SkippedFile",
    "StatusResponse",
    "VectorState",
]


class SkippedFile(TypedDict):
    path: str
    source: str
    reason: str
    at: float


class BatchJob(TypedDict):
    id: str
    provider: str
    chunks: int
    createdAt: float


class LastSync(TypedDict):
    """The last memory-file sync that finished."""

    at: float  # epoch seconds
    files: int
    added: int
    updated: int
    removed: int
    skipped: int
    errors: int


class Recovered(TypedDict):
    """A damaged index file set aside, this index started anew."""

    at: float
    reason: str
    keptAs: str


class WatcherState(TypedDict):
    backend: str  # inotify | polling
    reason: str | None  # why polling
    watchedDirs: int


class DaemonInfo(TypedDict):
    pid: int
    uptimeS: float
    socket: str
    watcher: WatcherState
    refusedConnections: int
    evictedConnections: int
    reloads: int
    reloadError: str | None
    loopErrors: int
    idleExitS: float | None  # exits after this long without a request (started on demand)
    abandonedRequests: int  # requests whose client hung up before the answer
    configError: NotRequired[str]  # added by the CLI: the config on disk does not load


class Citation(TypedDict):
    path: str
    startLine: int
    endLine: int
    source: str
    citation: str


class SearchResult(TypedDict):
    path: str  # workspace-relative, or sessions/<file>.jsonl
    startLine: int
    endLine: int
    score: float  # the hit's own relevance, 0..1: what minScore judges
    snippet: str
    source: str  # memory | sessions
    citation: str  # path#Lstart-Lend
    snippetStartLine: int
    snippetEndLine: int
    heading: str | None
    textScore: float
    vectorScore: NotRequired[float]  # hybrid and vector modes
    fusedScore: NotRequired[float]  # the rank key when two lists were fused
    also: NotRequired[list[Citation]]  # the same memory in the other source
    explain: NotRequired[dict[str, object]]  # explain: true: the score's parts
    # a memory entry's written signals (OpenClaw's annotations; MEMORY.md, USER.md)
    importance: NotRequired[int]
    triggers: NotRequired[str]  # "; "-joined phrases
    projectKey: NotRequired[str]  # "; "-joined repository keys
    # a transcript hit's provenance as OpenClaw classifies it (not for memory files,
    # whose provenance is their file's: the plugin asks OpenClaw's records)
    provenance: NotRequired[Provenance]


class Provenance(TypedDict):
    """Who said what a transcript chunk holds: the least trusted class among its
    messages (owner, agent, system, untrusted), the session's kind, and when its
    newest message was said (epoch milliseconds; 0 when no message said)."""

    originClass: str
    sessionKind: str
    observedAt: int


class CuratedEntry(TypedDict):
    """An entry of MEMORY.md or USER.md (memory_curated), annotations taken out of
    its snippet and given as fields."""

    path: str
    startLine: int
    endLine: int
    score: float  # 0: listed, not searched
    snippet: str
    source: str  # memory
    heading: str
    importance: NotRequired[int]
    triggers: NotRequired[str]
    projectKey: NotRequired[str]


class CuratedResponse(TypedDict):
    results: list[CuratedEntry]


class SearchResponse(TypedDict):
    results: list[SearchResult]
    provider: str | None
    model: str | None
    mode: str  # keyword | vector | hybrid | skipped
    fallback: str | None  # why this is not the mode asked for (or hybrid), else null
    skipped: NotRequired[str]  # gate: why the query was not searched
    abstained: NotRequired[str]  # abstain: why no result is returned
    relevance: NotRequired[float]  # abstain / explain: the query's relevance signal, 0..1
    explain: NotRequired[dict[str, object]]  # explain: true: the settings that ranked it
    # the time words read as dates: [{said, from, to}] ("yesterday" -> 2026-11-26)
    time: NotRequired[list[dict[str, str]]]


class VectorState(TypedDict):
    enabled: bool  # searches use vectors now
    available: bool  # sqlite-vec loaded
    reason: str | None  # why not enabled
    indexedModel: str | None
    pendingChunks: int | None
    cacheEntries: int


class ProgressState(TypedDict):
    """How far the writer's current long work has got."""

    phase: str  # "files" (reading and chunking) or "embedding"
    done: int
    total: int
    perSecond: float | None  # over the phase so far; None until measurable
    etaS: float | None  # seconds left at that rate


class MemoryState(TypedDict):
    """The daemon's in-memory snapshot of an agent's index (searches answered from it
    need no keyword or vector read of the store)."""

    # current (at the index's change versions), updating (catching up now), behind
    # (the next search starts catching up), loading (the first read), not loaded
    state: str
    keywordRows: int | None  # live chunks in the keyword postings; None: the store answers
    vectorRows: int | None  # live vectors kept; None: none kept (no vectors, or not read)
    error: str | None  # why the last update failed (searches read the store meanwhile)


class StatusResponse(TypedDict):
    version: str
    indexPath: str
    workspace: str | None
    sources: dict[str, dict[str, int]]  # {memory|sessions: {files, chunks}}
    files: int
    chunks: int
    provider: str | None
    model: str | None
    dims: int | None
    providerState: ProviderState
    mode: str  # what a search with no mode does: hybrid | keyword
    vector: VectorState
    sqlite: NotRequired[dict[str, str | None]]  # on SQLite: SQLite, sqlite-vec, binding
    postgresql: NotRequired[dict[str, str | None]]  # PostgreSQL, pgvector, HNSW in use
    fingerprint: dict[str, object] | None  # the settings the index was built with
    lastSync: LastSync | None
    dirty: bool
    pendingBatches: list[BatchJob]
    skipped: list[SkippedFile]
    sessionsDir: str | None
    transcriptsNote: str | None  # why no transcripts are indexed (None: they are read)
    malformedLines: int
    indexBytes: int
    checkedAt: float
    # a damaged index file was set aside and this index started anew: {at, reason, keptAs}
    recovered: NotRequired[Recovered]
    # the index holds another workspace than the one configured (searches refuse it)
    mismatch: NotRequired[str]
    # added by the daemon
    agent: NotRequired[str]
    agents: NotRequired[list[str]]
    daemon: NotRequired[DaemonInfo]
    lastError: NotRequired[str | None]
    errors: NotRequired[dict[str, str | None]]
    busy: NotRequired[dict[str, object] | None]  # what the writer is doing, how long
    # how far the files of a sync or an embedding backlog have got: {phase, done,
    # total, perSecond, etaS}
    progress: NotRequired[ProgressState | None]
    transcriptTails: NotRequired[int]  # transcripts with new lines searchable, not committed
    stuck: NotRequired[bool]
    memory: NotRequired[MemoryState]  # the daemon's in-memory snapshot


GetResponse = TypedDict(
    "GetResponse",
    {
        "path": str,
        "text": str,
        "from": int,
        "lines": int,
        "totalLines": int,
        "truncated": bool,
        "nextFrom": NotRequired[int],
    },
)


class QmdResult(TypedDict):
    """One ``qmd_search`` result, in QMD 2.x's own JSON shape."""

    docid: str
    score: float
    collection: str
    file: str  # qmd://<collection>/<path>
    title: str
    snippet: str


class PingResponse(TypedDict, total=False):
    ok: bool
    version: str
    agents: dict[str, str]  # agent -> where its index is
    workspaces: dict[str, str]  # agent -> the workspace it indexes


class ReindexResponse(TypedDict, total=False):
    """The sync report (``SyncReport.to_json``), the agent, where its index is and its
    provider's state."""

    agent: str
    indexPath: str  # a file, or the database's redacted URL
    added: int
    updated: int
    unchanged: int
    removed: int
    files: int
    chunksWritten: int
    chunksRemoved: int
    seconds: float
    stopped: bool
    rebuilt: str | None
    skipped: list[dict[str, str]]
    errors: list[dict[str, str]]
    sessions: dict[str, object] | None
    embedding: dict[str, object] | None
    providerState: ProviderState | None


class AuditFinding(TypedDict):
    """One thing wrong with the memory: where (a file's lines), what, and what to do."""

    kind: str  # bootstrap | stale | duplicates | conflicts | unfindable | secrets
    path: str
    startLine: int
    endLine: int
    message: str
    suggestion: str
    snippet: NotRequired[str]  # the entry's text (a secret masked), at most 200 chars
    # stale / duplicates / conflicts: the other place ("memory/2026-11-20.md#L4-L4")
    other: NotRequired[str]
    newer: NotRequired[str]  # stale: the value the later note gives
    pattern: NotRequired[str]  # secrets: which of the redaction's patterns
    query: NotRequired[str]  # unfindable: the question asked
    recalled: NotRequired[int]  # bootstrap: times memory_search returned the entry


class AuditResponse(TypedDict):
    counts: dict[str, int]  # findings per kind (every kind looked for, 0 included)
    findings: list[AuditFinding]  # the most important first
    checked: dict[str, int]  # what was read: entries, notes, files
    caps: dict[str, int]  # the bootstrap caps applied (MEMORY.md, USER.md, total)
