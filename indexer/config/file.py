"""Reading the configuration: a TOML file (unknown keys and out-of-range values are
errors), an OpenClaw config (``openclaw.py``) and command-line overrides -> one
``Config`` per agent (``Settings``)."""

from __future__ import annotations

import os
import re
from dataclasses import fields, is_dataclass, replace
from pathlib import Path
from typing import Any

from indexer.config import (
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
    default_config_path,
    is_database_url,
)
from indexer.config.schema import check_values, time_zone
from indexer.config.stages import split_stages
from indexer.config.text_file import read_config_text
from indexer.errors import ConfigError

__all__ = ["load_config", "load_settings", "parse_config", "socket_despite"]


def _expand(value: str, base: Path | None) -> Path:
    p = Path(os.path.expandvars(os.path.expanduser(value)))
    if not p.is_absolute() and base is not None:
        p = base / p
    return p


def _section(data: dict[str, Any], name: str, cls: type[Any], where: str) -> Any:
    raw = data.pop(name, {})
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: [{name}] must be a table")
    known = {f.name: f for f in fields(cls)}
    kwargs: dict[str, object] = {}
    defaults = cls()
    for key, value in raw.items():
        if key not in known:
            hint = _did_you_mean(key, list(known), f"{name}.")
            raise ConfigError(
                f"{where}: unknown key '{name}.{key}'{hint} (known: {', '.join(known)})"
            )
        want = type(getattr(defaults, key))
        if want is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, want) or isinstance(value, bool) != (want is bool):
            raise ConfigError(
                f"{where}: '{name}.{key}' must be {want.__name__}, got {type(value).__name__}"
            )
        kwargs[key] = value
    return cls(**kwargs)


def _query(data: dict[str, Any], where: str) -> QueryConfig:
    """``[query]`` with its ``[query.stages]`` switches (``config.stages``)."""
    raw = data.pop("query", {})
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: [query] must be a table")
    raw, stages_raw = split_stages(raw, where)
    stages = _section({"query.stages": stages_raw}, "query.stages", StagesConfig, where)
    query: QueryConfig = _section({"query": raw}, "query", QueryConfig, where)
    return replace(query, stages=stages)


def _extra_paths(raw: Any, base: Path | None, where: str) -> tuple[ExtraPath, ...]:
    if not isinstance(raw, list):
        raise ConfigError(f"{where}: 'extraPaths' must be a list")
    out: list[ExtraPath] = []
    for item in raw:
        if isinstance(item, str):
            out.append(ExtraPath(_expand(item, base)))
        elif isinstance(item, dict) and isinstance(item.get("path"), str):
            pattern = item.get("pattern")
            if pattern is not None and not isinstance(pattern, str):
                raise ConfigError(f"{where}: extraPaths pattern must be a string")
            unknown = set(item) - {"path", "pattern"}
            if unknown:
                raise ConfigError(f"{where}: unknown extraPaths keys {sorted(unknown)}")
            out.append(ExtraPath(_expand(item["path"], base), pattern))
        else:
            raise ConfigError(f"{where}: extraPaths entries are strings or {{path, pattern}}")
    return tuple(out)


_TOP = ("workspace", "stateDir", "indexPath", "agentId", "extraPaths", "ignore", "agents")
_SECTIONS = {
    "chunking": ChunkingConfig,
    "query": QueryConfig,
    "limits": LimitsConfig,
    "sessions": SessionsConfig,
    "sync": SyncConfig,
    "server": ServerConfig,
    "provider": ProviderConfig,
    "hybrid": HybridConfig,
    "rerank": RerankConfig,
    "cache": CacheConfig,
    "store": StoreConfig,
}


def _did_you_mean(word: str, choices: list[str], prefix: str = "") -> str:
    import difflib

    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return f" (did you mean '{prefix}{close[0]}'?)" if close else ""


def _where_it_goes(key: str) -> str:
    """For a key at the top level that is not one: the section that has it, or the
    name it is probably a misspelling of."""
    homes = [s for s, cls in _SECTIONS.items() if key in {f.name for f in fields(cls)}]
    if homes:
        return f" belongs under [{homes[0]}]"
    hint = _did_you_mean(key, [*_TOP, *_SECTIONS])
    return hint or " is not a memindex setting (config/memindex.toml lists them all)"


def parse_config(
    data: dict[str, Any], *, source: Path | None = None
) -> tuple[Config, tuple[Config, ...]]:
    """Build (defaults, agents) from parsed TOML; relative paths are relative to the
    file. ``agents`` is empty when the file has no ``[[agents]]`` list."""
    where = str(source) if source else "config"
    data = dict(data)
    base = source.parent if source else Path.cwd()
    kwargs = _sections(data, base, where)
    for key in ("workspace", "stateDir", "indexPath"):
        if key in data:
            value = data.pop(key)
            if not isinstance(value, str):
                raise ConfigError(f"{where}: '{key}' must be a string path")
            kwargs[key] = _expand(value, base)
    if "agentId" in data:
        value = data.pop("agentId")
        if not isinstance(value, str) or not _valid_agent_id(value):
            raise ConfigError(f"{where}: 'agentId' must be a plain name")
        kwargs["agentId"] = value
    if "extraPaths" in data:
        kwargs["extraPaths"] = _extra_paths(data.pop("extraPaths"), base, where)
    if "ignore" in data:
        value = data.pop("ignore")
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{where}: 'ignore' must be a list of glob strings")
        kwargs["ignore"] = tuple(value)
    agents_raw = data.pop("agents", None)
    if data:
        hints = "".join(f"; '{k}'{_where_it_goes(k)}" for k in sorted(data))
        raise ConfigError(f"{where}: unknown key(s): {', '.join(sorted(data))}{hints}")
    cfg = Config(source=source, **kwargs)
    _validate(cfg, where)
    return cfg, _agents(cfg, agents_raw, base, where)


def _sections(data: dict[str, Any], base: Path, where: str) -> dict[str, Any]:
    """Every section, taken out of ``data`` by name, its paths made absolute."""
    chunking = _section(data, "chunking", ChunkingConfig, where)
    query = _query(data, where)
    limits = _section(data, "limits", LimitsConfig, where)
    sessions = _section(data, "sessions", SessionsConfig, where)
    if sessions.dir:
        sessions = replace(sessions, dir=str(_expand(sessions.dir, base)))
    if sessions.database:
        sessions = replace(sessions, database=str(_expand(sessions.database, base)))
    sync = _section(data, "sync", SyncConfig, where)
    server = _section(data, "server", ServerConfig, where)
    provider = _provider(data, base, where)
    hybrid = _section(data, "hybrid", HybridConfig, where)
    rerank = _section(data, "rerank", RerankConfig, where)
    check_values(rerank, "rerank.", where)  # its provider, before what it needs
    if rerank.provider == "http" and not rerank.baseUrl:
        raise ConfigError(f"{where}: rerank.provider http needs rerank.baseUrl")
    if rerank.provider == "local" and not rerank.model:
        raise ConfigError(f"{where}: rerank.provider local needs rerank.model (a .gguf file)")
    if rerank.provider == "local" and not rerank.model.startswith("hf:"):
        rerank = replace(rerank, model=str(_expand(rerank.model, base)))
    cache = _section(data, "cache", CacheConfig, where)
    store = _section(data, "store", StoreConfig, where)
    for key, value in (("url", store.url), ("readUrl", store.readUrl)):
        if value and not is_database_url(value):
            raise ConfigError(f"{where}: store.{key} must be a postgresql:// URL")
    if server.socket:
        server = replace(server, socket=str(_expand(server.socket, base)))
    return {
        "chunking": chunking,
        "query": query,
        "limits": limits,
        "sessions": sessions,
        "sync": sync,
        "server": server,
        "provider": provider,
        "hybrid": hybrid,
        "rerank": rerank,
        "cache": cache,
        "store": store,
    }


def _provider(data: dict[str, Any], base: Path, where: str) -> ProviderConfig:
    """``[provider]`` with its ``[provider.local]`` and ``[provider.remote]`` tables."""
    provider_raw = data.pop("provider", {})
    if not isinstance(provider_raw, dict):
        raise ConfigError(f"{where}: [provider] must be a table")
    provider_raw = dict(provider_raw)
    local = _section(provider_raw, "local", LocalProviderConfig, where)
    if local.modelPath and not local.modelPath.startswith("hf:"):
        local = replace(local, modelPath=str(_expand(local.modelPath, base)))
    if local.model and local.modelPath:
        raise ConfigError(
            f"{where}: set provider.local.model (a model by name) or provider.local.modelPath "
            "(a file), not both"
        )
    if local.modelCacheDir:
        local = replace(local, modelCacheDir=str(_expand(local.modelCacheDir, base)))
    remote = _section(provider_raw, "remote", RemoteProviderConfig, where)
    provider: ProviderConfig = _section(
        {"provider": provider_raw}, "provider", ProviderConfig, where
    )
    return replace(provider, local=local, remote=remote)


_AGENT_KEYS = {"id", "workspace", "indexPath", "extraPaths", "ignore", "sessionsDir"}


def _agents(defaults: Config, raw: Any, base: Path, where: str) -> tuple[Config, ...]:
    """``[[agents]]`` entries: each inherits every top-level setting it does not set."""
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(a, dict) for a in raw):
        raise ConfigError(f"{where}: 'agents' must be a list of tables ([[agents]])")
    out: list[Config] = []
    seen: set[str] = set()
    for entry in raw:
        unknown = set(entry) - _AGENT_KEYS
        if unknown:
            raise ConfigError(f"{where}: unknown agents key(s) {sorted(unknown)}")
        aid = entry.get("id")
        if not isinstance(aid, str) or not _valid_agent_id(aid):
            raise ConfigError(f"{where}: every [[agents]] entry needs a plain 'id'")
        if aid in seen:
            raise ConfigError(f"{where}: agent '{aid}' is listed twice")
        seen.add(aid)
        agent = replace(defaults, agentId=aid)
        for key in ("workspace", "indexPath"):
            if key in entry and not isinstance(entry[key], str):
                raise ConfigError(f"{where}: agents.{key} must be a string path")
        ws, at = (
            _expand(entry[k], base) if k in entry else None for k in ("workspace", "indexPath")
        )
        agent = replace(agent, workspace=ws or agent.workspace, indexPath=at or agent.indexPath)
        if "sessionsDir" in entry:
            if not isinstance(entry["sessionsDir"], str):
                raise ConfigError(f"{where}: agents.sessionsDir must be a string path")
            agent = replace(
                agent,
                sessions=replace(agent.sessions, dir=str(_expand(entry["sessionsDir"], base))),
            )
        if "extraPaths" in entry:
            agent = replace(agent, extraPaths=_extra_paths(entry["extraPaths"], base, where))
        if "ignore" in entry:
            value = entry["ignore"]
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ConfigError(f"{where}: agents.ignore must be a list of glob strings")
            agent = replace(agent, ignore=tuple(value))
        out.append(agent)
    return tuple(out)


_AGENT_ID = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,63}$")


def _valid_agent_id(value: str) -> bool:
    """Letters, digits, ``_ . -``, not starting with a dot: it names a file in the
    state dir, so ``../x`` or ``a/b`` must never get that far."""
    return bool(_AGENT_ID.match(value))


def _validate(cfg: Config, where: str) -> None:
    for f in fields(cfg):
        value = getattr(cfg, f.name)
        if is_dataclass(value):
            check_values(value, f"{f.name}.", where)
    c = cfg.chunking
    if not 0 <= c.overlap < c.tokens:
        raise ConfigError(f"{where}: chunking.overlap must be >= 0 and below chunking.tokens")
    try:
        time_zone(cfg.query.timeZone)
    except ValueError as exc:
        raise ConfigError(f"{where}: query.timeZone: {exc}") from None


def load_settings(
    path: Path | None = None,
    *,
    workspace: Path | None = None,
    agent: str | None = None,
    openclaw: Path | None = None,
) -> Settings:
    """Read the config file (explicit ``path``, else the default one if it exists) and
    apply command-line overrides. With no workspace anywhere, OpenClaw's default
    workspace ``~/.openclaw/workspace`` is used when it exists."""
    cfg = Config()
    agents: tuple[Config, ...] = ()
    file = path if path is not None else default_config_path()
    if path is not None and not file.exists():
        raise ConfigError(f"config file {file} does not exist")
    if path is not None or file.is_file():
        import tomllib  # only with a config file: 10 ms of every CLI process otherwise

        try:  # a regular file only, read without blocking (a FIFO there never hangs)
            data = tomllib.loads(read_config_text(file))
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{file}: not valid TOML: {exc}") from exc
        except OSError as exc:
            raise ConfigError(f"{file}: cannot read: {exc.strerror}") from exc
        cfg, agents = parse_config(data, source=file)
    if openclaw is not None:  # OpenClaw's agents and memorySearch settings on top
        from indexer.openclaw import load_openclaw

        agents = load_openclaw(Path(os.path.expanduser(str(openclaw))), cfg)
    if agent is not None and not _valid_agent_id(agent):
        raise ConfigError(
            f"--agent {agent!r}: an agent id is letters, digits, '_', '.' and '-' "
            "(it names the index file; no '/' and no leading '.')"
        )
    if agent is not None:  # one of the configured agents, or name the only one
        agents = (Settings(agents).agent(agent),) if agents else (replace(cfg, agentId=agent),)
    if not agents:
        agents = (cfg,)
    if workspace is not None:
        ws = Path(os.path.expanduser(str(workspace))).absolute()
        agents = (replace(agents[0], workspace=ws),) + agents[1:]
    openclaw = Path.home() / ".openclaw" / "workspace"
    agents = tuple(
        replace(a, workspace=openclaw) if a.workspace is None and openclaw.is_dir() else a
        for a in agents
    )
    from indexer.openclaw import with_openclaws_transcripts

    return Settings(tuple(with_openclaws_transcripts(a) for a in agents))


def load_config(
    path: Path | None = None,
    *,
    workspace: Path | None = None,
    agent: str | None = None,
    openclaw: Path | None = None,
) -> Config:
    """The Config of one agent (``agent``, else the first configured)."""
    return load_settings(path, workspace=workspace, agent=agent, openclaw=openclaw).agents[0]


def socket_despite(given: Path | None, openclaw: Path | None = None) -> Path:
    """The socket a config file that does not load names (``server.socket``, else
    beside its ``stateDir``, resolved as ``load_config`` does), read from its TOML as
    far as it parses; the default socket when it names none or is not TOML at all.
    With an OpenClaw config (which need not load either): that OpenClaw's socket."""
    import tomllib  # as load_config: only when there is a file to read

    source = given or default_config_path()
    try:
        raw = tomllib.loads(read_config_text(source))  # a FIFO there never blocks
    except (OSError, ConfigError, tomllib.TOMLDecodeError):
        raw = {}
    base = source.parent
    server, state = raw.get("server"), raw.get("stateDir")
    sock = server.get("socket") if isinstance(server, dict) else None
    cfg = Config(
        stateDir=_expand(state, base) if isinstance(state, str) and state else None,
        server=ServerConfig(
            socket=str(_expand(sock, base)) if isinstance(sock, str) and sock else ""
        ),
    )
    if openclaw is not None:
        from indexer.openclaw import own_installation

        cfg = own_installation(Path(os.path.expanduser(str(openclaw))), cfg)
    return cfg.socket_path()
