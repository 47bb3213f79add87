"""The configuration, one package: ``model`` (``Config``, one immutable value per
agent, and ``Settings``, every agent a daemon serves), its sections (``sections``,
the one schema of keys, defaults, ranges and meanings, in the vocabulary of
``schema``; ``stages``, the ranking stages' switches), the file reader (``file``), the
writers of the example file and docs/CONFIG.md (``docs``), and the careful editor of
a config file (``edit``); ``text_file`` reads a file the user named (regular files only).

This package is the lowest layer with ``errors``: it imports ``providers`` and
``indexer.errors`` only. ``from indexer.config import Config`` (and every name
below) is the model; the reader and the writers are imported by name
(``indexer.config.file``).
"""

from indexer.config.model import (
    DEFAULT_IGNORE_DIRS,
    CacheConfig,
    ChunkingConfig,
    Config,
    ExtraPath,
    HybridConfig,
    LimitsConfig,
    LocalProviderConfig,
    ProviderConfig,
    QueryConfig,
    RemoteProviderConfig,
    RerankConfig,
    ServerConfig,
    SessionsConfig,
    Settings,
    StagesConfig,
    StoreConfig,
    SyncConfig,
    database_location,
    default_config_path,
    is_database_url,
    redact_url,
    socket_dir,
    state_dir,
)

__all__ = [
    "CacheConfig",
    "ChunkingConfig",
    "Config",
    "DEFAULT_IGNORE_DIRS",
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
    "Settings",
    "StagesConfig",
    "StoreConfig",
    "SyncConfig",
    "database_location",
    "default_config_path",
    "is_database_url",
    "redact_url",
    "socket_dir",
    "state_dir",
]
