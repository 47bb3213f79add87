"""The config file's sections: one frozen dataclass per ``[section]``, and beside each
key its default, its allowed range or values, and what it means (``setting``).

This is the one schema: ``config.file`` checks a file against it, and
``config.docs`` writes ``config/memindex.toml`` and docs/CONFIG.md's table from it (a
test keeps both in step). Key names follow OpenClaw's ``memorySearch`` settings
where they overlap.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from indexer.config.schema import MiB, choices_of, doc_of, range_of, setting, time_zone
from indexer.config.stages import StagesConfig
from providers.models import MODELS
from providers.names import KEY_VARIABLES, REMOTE_LABELS, info
from providers.names import ORDER as PROVIDERS

_VOYAGE_KEYS = " or ".join(p.key_env if (p := info("voyage")) else ())  # the reranker's too

__all__ = [
    "CacheConfig",
    "ChunkingConfig",
    "HybridConfig",
    "LimitsConfig",
    "LocalProviderConfig",
    "ProviderConfig",
    "QueryConfig",
    "RemoteProviderConfig",
    "RerankConfig",
    "ServerConfig",
    "SessionsConfig",
    "StoreConfig",
    "SyncConfig",
    "choices_of",
    "doc_of",
    "range_of",
    "setting",
    "time_zone",
]


@dataclass(frozen=True)
class ChunkingConfig:
    """``[chunking]``: chunk size and overlap."""

    tokens: int = setting(400, "target chunk size, in cl100k_base tokens", range=(16, 8192))
    overlap: int = setting(
        80, "tokens of whole lines shared by consecutive chunks (below tokens)", range=(0, 8191)
    )


@dataclass(frozen=True)
class QueryConfig:
    """``[query]``: results, their floor and the ranking stages' settings."""

    maxResults: int = setting(6, "results per search", range=(1, 200))
    minScore: float = setting(
        0.35,
        "drop results scoring below this, unless their keyword score or cosine reaches it or "
        "they hold an exact token or every query word (those are shown at minScore)",
        range=(0.0, 1.0),
    )
    maxSnippetChars: int = setting(
        700, "snippet length, from the best-matching line on", range=(80, 100_000)
    )
    memoryShare: float = setting(
        0.5,
        "searching both sources: the share of each first n results kept for memory files "
        "(stages.balance)",
        range=(0.0, 1.0),
    )
    halfLifeDays: float = setting(30.0, "stages.decay's half-life", range=(0.001, None))
    mmrLambda: float = setting(0.7, "1 = relevance only, 0 = diversity only", range=(0.0, 1.0))
    abstainBelow: float = setting(
        0.1,
        "with abstain: true (--abstain), no results when the query's relevance signal is "
        "below this (docs/lab/retrieval-log.md, Abstention)",
        range=(0.0, 1.0),
    )
    dateBoost: float = setting(
        0.5,
        '"last week", "in March", "yesterday": what is dated in the time the query names '
        "(daily logs by file name, transcripts by message time) ranks 1 + this times "
        "higher, and a query that is only time lists it; 0 = time words are words",
        range=(0.0, 10.0),
    )
    timeZone: str = setting(
        "",
        'what "today" is and which day a message belongs to: an IANA name; "" = the '
        "host's (memindex openclaw import: agents.defaults.userTimezone); transcript "
        "chunks are cut at its midnights, so a change rebuilds the index",
        example='"Europe/Lisbon"',
    )
    stages: StagesConfig = field(default_factory=StagesConfig)


@dataclass(frozen=True)
class LimitsConfig:
    """``[limits]``: how much of a file is read, and which files."""

    maxFileBytes: int = setting(
        8 * MiB, "larger files are skipped (and listed in memindex status)", range=(1024, None)
    )
    maxGetBytes: int = setting(
        1 * MiB,
        "memory_get returns at most this much text (truncated, nextFrom)",
        range=(1024, 64 * MiB),
    )
    allowHardLinks: bool = setting(
        False,
        "index and serve files that have more than one name; off, a hard link is skipped "
        "(status says so): a link made in the workspace to an outside file would be served "
        "as a memory",
    )


@dataclass(frozen=True)
class SessionsConfig:
    """``[sessions]``: where transcripts are and when a delta is indexed."""

    enabled: bool = setting(True, "index the agent's session transcripts (source sessions)")
    dir: str = setting(
        "",
        "the transcripts folder; default ~/.openclaw/agents/<agentId>/sessions when an "
        "agent id is given, or .../main/sessions for ~/.openclaw/workspace; else none",
    )
    deltaBytes: int = setting(
        100_000,
        "new lines are searchable within the watcher's debounce; the daemon commits them "
        "(cuts the chunks for good) once this many new bytes ...",
        range=(1, None),
    )
    deltaMessages: int = setting(50, "... or this many new lines have arrived,", range=(1, None))
    idleFlushMs: int = setting(
        60_000, "or once a smaller delta has been quiet this long", range=(0, None)
    )
    includeRotated: bool = setting(True, "also *.jsonl.reset.* and *.jsonl.deleted.*")
    database: str = setting(
        "",
        "OpenClaw 2026.9+ keeps transcripts in the agent's database: default "
        "<dir>/../agent/openclaw-agent.sqlite, for an OpenClaw layout only (read-only, "
        "never written)",
    )


@dataclass(frozen=True)
class LocalProviderConfig:
    """``[provider.local]``: the GGUF model and its threads."""

    model: str = setting(
        "",
        "a model by name, fetched once with `memindex model pull <name>` into modelCacheDir "
        '("" = use modelPath)',
        choices=("", *MODELS),
    )
    modelPath: str = setting("", "a .gguf embedding model, or hf:<owner>/<repo>/<file>.gguf")
    modelCacheDir: str = setting(
        "",
        'where pulled and hf: models are kept; "" = $MEMINDEX_MODEL_CACHE, else '
        "$XDG_CACHE_HOME/memindex/models (~/.cache/memindex/models without it)",
    )
    threads: int = setting(0, "0 = all cores", range=(0, 1024))
    queryPrefix: str = setting(
        "", 'text put before a query ("" = the model file\'s own, e.g. e5\'s "query: ")'
    )
    documentPrefix: str = setting(
        "", 'text put before a chunk ("" = the model file\'s own, e.g. e5\'s "passage: ")'
    )


@dataclass(frozen=True)
class RemoteProviderConfig:
    """``[provider.remote]``: a remote embedding API's endpoint and key."""

    baseUrl: str = setting("", '"" = the provider\'s public endpoint')
    apiKey: str = setting("", f"prefer the environment variables ({KEY_VARIABLES})")
    timeoutMs: int = setting(60_000, "one embedding request's time limit", range=(1, None))
    queryTimeoutMs: int = setting(
        5_000,
        "a search waits this long for its query vector, then uses keywords",
        range=(1, None),
    )
    batch: bool = setting(False, "index through the batch API (cheaper, may take hours)")
    batchTimeoutMs: int = setting(
        3_600_000, "how long memindex index waits for batch jobs", range=(1, None)
    )


@dataclass(frozen=True)
class ProviderConfig:
    """``[provider]``: which embedding provider, and its settings."""

    name: str = setting(
        "auto",
        "embeddings for hybrid search. auto: a configured local model, else the first of "
        f"{REMOTE_LABELS} whose API key is set ({KEY_VARIABLES}), else none = keyword "
        "search only",
        choices=("auto", *PROVIDERS, "none"),
    )
    fallback: str = setting(
        "none",
        "the provider to use (with its default model) when the one above cannot be set up",
        choices=(*PROVIDERS, "none"),
    )
    model: str = setting("", '"" = the provider\'s default (openai: text-embedding-3-small)')
    dims: int = setting(
        0, "0 = the model's default; openai text-embedding-3-* can shorten", range=(0, 8192)
    )
    local: LocalProviderConfig = field(default_factory=LocalProviderConfig)
    remote: RemoteProviderConfig = field(default_factory=RemoteProviderConfig)


@dataclass(frozen=True)
class HybridConfig:
    """``[hybrid]``: how keyword and vector results are fused."""

    enabled: bool = setting(True, "search with vectors too, when a provider has built them")
    vectorWeight: float = setting(
        0.3,
        "weighted fusion: the vector side's weight (OpenClaw uses 0.7/0.3; 0.3/0.7 ranked "
        "best on both evaluation sets, docs/RETRIEVAL.md)",
        range=(0.0, 1.0),
    )
    textWeight: float = setting(0.7, "weighted fusion: the keyword side's weight", range=(0.0, 1.0))
    vectorWeightWeak: float = setting(
        0.5,
        "weighted fusion: the vector side's weight when none of the best three keyword hits "
        "holds any query word (a paraphrase); between this and vectorWeight's share of the "
        "two weights by the largest share of the query's words one of them holds; at or "
        "below that share: one fixed weight",
        range=(0.0, 1.0),
    )
    candidateMultiplier: int = setting(
        4,
        "candidates per side and source = this x maxResults, and x 10 at least: the first "
        "results are the same for every maxResults up to 10",
        range=(1, 20),
    )
    fusion: str = setting(
        "weighted",
        "weighted: each side scaled 0..1 per query; rrf: reciprocal rank fusion",
        choices=("weighted", "rrf"),
    )
    rrfK: int = setting(60, "rrf's k", range=(1, None))


@dataclass(frozen=True)
class RerankConfig:
    """``[rerank]``: the optional reranker and how its scores are blended."""

    provider: str = setting(
        "",
        'a second opinion on the fused candidates: "" (off), voyage, http (a Jina/Cohere-style '
        "POST <baseUrl>/rerank: Jina, TEI, llama-server --reranking) or local (a reranker "
        ".gguf)",
        choices=("", "voyage", "http", "local"),
    )
    model: str = setting(
        "",
        "voyage: rerank-2.5; http: the server's model; local: a .gguf file or "
        "hf:<owner>/<repo>/<file>.gguf",
    )
    baseUrl: str = setting(
        "", 'http: required, e.g. "http://127.0.0.1:8080/v1"; voyage: its public endpoint'
    )
    apiKey: str = setting("", f"prefer MEMINDEX_RERANK_API_KEY (or {_VOYAGE_KEYS})")
    candidates: int = setting(
        40, "the best this many fused candidates are reranked", range=(1, 200)
    )
    blend: str = setting(
        "rank",
        "rank: the fused order trusted more at the top; fixed: by weight",
        choices=("rank", "fixed"),
    )
    weight: float = setting(0.6, "fixed: weight x rerank + (1 - weight) x fused", range=(0.0, 1.0))
    timeoutMs: int = setting(3_000, "then the fused order, with a fallback reason", range=(1, None))
    maxChars: int = setting(4_000, "characters of each chunk sent", range=(16, 100_000))
    cacheEntries: int = setting(20_000, "rerank scores kept per process", range=(0, None))


@dataclass(frozen=True)
class CacheConfig:
    """``[cache]``: the embedding cache."""

    maxEntries: int = setting(
        50_000, "embedding cache entries kept (the least recently used dropped)", range=(0, None)
    )


@dataclass(frozen=True)
class SyncConfig:
    """``[sync]``: the watcher, its debounce, polling and rescans."""

    watchDebounceMs: int = setting(
        1500, "quiet time after a change before the daemon re-indexes", range=(0, 3_600_000)
    )
    watcher: str = setting(
        "auto",
        "auto: inotify where it works, else polling",
        choices=("auto", "inotify", "polling"),
    )
    pollIntervalMs: int = setting(
        2000, "polling period when inotify is unavailable or exhausted", range=(50, 3_600_000)
    )
    rescanMs: int = setting(
        300_000,
        "the daemon syncs this often even with no event (events the kernel dropped, file "
        "systems that send none; unchanged files cost a stat); 0 = never",
        range=(0, 86_400_000),
    )


@dataclass(frozen=True)
class ServerConfig:
    """``[server]``: the daemon's socket and its bounds."""

    socket: str = setting(
        "", "the socket; default $XDG_RUNTIME_DIR/memindex.sock, else <stateDir>/memindex.sock"
    )
    maxRequestBytes: int = setting(
        1 * MiB, "a longer request line gets an error", range=(1024, 64 * MiB)
    )
    maxReplyBytes: int = setting(
        16 * MiB,
        "a larger reply (or batch of replies) becomes an error saying so",
        range=(64 * 1024, 1024 * MiB),
    )
    maxConnections: int = setting(
        256,
        "open client connections; at the limit the one idle the longest is closed to make "
        "room, and only when all are answering is a new one refused as busy",
        range=(1, 100_000),
    )
    idleTimeoutMs: int = setting(
        300_000, "an idle client connection is closed after this long", range=(1000, None)
    )


@dataclass(frozen=True)
class StoreConfig:
    """``[store]``: SQLite file or PostgreSQL database."""

    url: str = setting(
        "",
        "postgresql://...: keep the index in PostgreSQL (else MEMINDEX_DATABASE_URL, else "
        "one SQLite file per agent)",
    )
    readUrl: str = setting("", "a replica that answers searches (writes always go to url)")
    poolSize: int = setting(
        10,
        "connections per agent and process (the writer holds one, two are kept for upkeep, "
        "searches share the rest)",
        range=(1, 10_000),
    )
