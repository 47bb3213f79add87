"""Reading an existing ``openclaw.json`` (JSON5) into memindex agents.

What is read: ``agents.defaults.memorySearch`` (and 2026.9's ``memory.search``),
per-agent overrides merged field by field (``agents.list[]`` with ``id`` /
``workspace`` / ``memorySearch``, or 2026.9's ``agents.entries.<id>`` with
``memory.search``), each agent's workspace (else ``agents.defaults.workspace``, else
``~/.openclaw/workspace``), and ``memory.qmd.paths`` as extra paths. Transcripts come
from ``<state dir>/agents/<id>/sessions`` when ``sources`` includes ``"sessions"``; the
state dir is OpenClaw's (``$OPENCLAW_STATE_DIR``, else ``$OPENCLAW_HOME/.openclaw``,
else ``~/.openclaw``). Each openclaw.json is its own installation: any but the default
state dir's gets ``<state>/openclaw-<id>/`` and ``memindex-<id>.sock``
(``config_identity``), so two OpenClaws never share a daemon or an index.

Not taken: ``store.path`` (memindex keeps its state in its own state dir) and
providers memindex does not have (mistral: auto-selection picks another). Unknown
keys and settings of the wrong type are ignored: this is someone else's file."""

from __future__ import annotations

import hashlib
import math
import os
import re
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from indexer.config import (
    CacheConfig,
    ChunkingConfig,
    Config,
    ExtraPath,
    HybridConfig,
    ProviderConfig,
    QueryConfig,
    socket_dir,
    state_dir,
)
from indexer.config.sections import time_zone
from indexer.config.text_file import read_json5
from indexer.errors import ConfigError
from providers.names import ORDER

__all__ = [
    "config_identity",
    "dig",
    "load_openclaw",
    "openclaw_agent_of",
    "openclaw_state_dir",
    "own_installation",
    "with_openclaws_transcripts",
]

_PROVIDERS = {"auto", *ORDER, "none"}


def _merge(base: Mapping[str, object], over: Mapping[str, object]) -> dict[str, object]:
    """Field-by-field merge, as OpenClaw merges per-agent memorySearch overrides."""
    out = dict(base)
    for k, v in over.items():
        was = out.get(k)
        out[k] = _merge(was, v) if isinstance(v, dict) and isinstance(was, dict) else v
    return out


def normalize_agent_id(value: str) -> str:
    """An agent id as OpenClaw normalises it: lower-cased, each run of characters
    other than a-z 0-9 _ - as one "-", no "-" at either end, at most 64 characters;
    "main" when nothing is left."""
    text = re.sub(r"[^a-z0-9_-]+", "-", value.strip().lower()).strip("-")[:64]
    return text or "main"


def dig(d: Any, *keys: str) -> Any:
    """``d[k1][k2]…`` of parsed JSON, None where a level is missing or not an object."""
    for k in keys:
        if not isinstance(d, dict):
            return None
        d = d.get(k)
    return d


def table(d: Any, *keys: str) -> dict[str, Any]:
    """``dig`` for an object: {} where it is missing or not an object (ignored)."""
    return found if isinstance(found := dig(d, *keys), dict) else {}


def _path(value: str, base: Path) -> Path:
    p = Path(os.path.expandvars(os.path.expanduser(value)))
    return p if p.is_absolute() else base / p


def _num(value: Any, kind: type, lo: float, hi: float) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None  # NaN and Infinity (JSON5 has them) as any unusable value: ignored
    v = kind(value)
    return v if lo <= v <= hi else None


def _apply(cfg: Config, ms: dict[str, Any], base: Path) -> Config:
    """memorySearch settings onto a Config; anything unusable keeps memindex's value."""
    cfg = replace(cfg, provider=_provider(cfg.provider, ms, base))
    sources = ms.get("sources")
    if isinstance(sources, list):
        cfg = replace(cfg, sessions=replace(cfg.sessions, enabled="sessions" in sources))
    extra = ms.get("extraPaths")
    if isinstance(extra, list):
        cfg = replace(cfg, extraPaths=cfg.extraPaths + tuple(_extras(extra, base)))
    cfg = replace(cfg, chunking=_chunking(cfg.chunking, table(ms, "chunking")))
    cfg = _sync(cfg, ms)
    q = table(ms, "query")
    hy = _merge(table(ms, "hybrid"), table(q, "hybrid"))
    query = _query(cfg.query, q, hy)
    hybrid = _hybrid(cfg.hybrid, hy)
    cache = cfg.cache
    me = _num(dig(ms, "cache", "maxEntries"), int, 1, 10**9)
    if me is not None:
        cache = CacheConfig(maxEntries=me)
    return replace(cfg, query=query, hybrid=hybrid, cache=cache)


def _provider(prov: ProviderConfig, ms: dict[str, Any], base: Path) -> ProviderConfig:
    """memorySearch's provider, model and fallback, its local model and its remote endpoint."""
    name = ms.get("provider")
    if isinstance(name, str) and name in _PROVIDERS:
        prov = replace(prov, name=name)
    if isinstance(ms.get("model"), str):
        prov = replace(prov, model=ms["model"])
    fb = ms.get("fallback")
    if isinstance(fb, str) and fb in _PROVIDERS - {"auto"}:
        prov = replace(prov, fallback=fb)
    local = table(ms, "local")
    if isinstance(local.get("modelPath"), str):
        mp = local["modelPath"]
        mp = mp if mp.startswith("hf:") else str(_path(mp, base))
        prov = replace(prov, local=replace(prov.local, modelPath=mp, model=""))
    if isinstance(local.get("modelCacheDir"), str):
        prov = replace(
            prov, local=replace(prov.local, modelCacheDir=str(_path(local["modelCacheDir"], base)))
        )
    remote = table(ms, "remote")
    r = prov.remote
    if isinstance(remote.get("baseUrl"), str):
        r = replace(r, baseUrl=remote["baseUrl"])
    if isinstance(remote.get("apiKey"), str):
        r = replace(r, apiKey=remote["apiKey"])
    if isinstance(dig(remote, "batch", "enabled"), bool):
        r = replace(r, batch=remote["batch"]["enabled"])
    minutes = _num(dig(remote, "batch", "timeoutMinutes"), float, 1, 10_000)
    if minutes is not None:
        r = replace(r, batchTimeoutMs=int(minutes * 60_000))
    return replace(prov, remote=r)


def _chunking(old: ChunkingConfig, ch: dict[str, Any]) -> ChunkingConfig:
    """memorySearch.chunking; an overlap that does not fit the chunk size becomes a fifth of it."""
    tokens = _num(ch.get("tokens"), int, 16, 100_000) or old.tokens
    overlap = _num(ch.get("overlap"), int, 0, tokens - 1)
    chunking = ChunkingConfig(tokens, old.overlap if overlap is None else overlap)
    if chunking.overlap >= chunking.tokens:
        chunking = ChunkingConfig(tokens, tokens // 5)
    return chunking


def _sync(cfg: Config, ms: dict[str, Any]) -> Config:
    """memorySearch.sync: the watcher's debounce and the transcripts' reindex thresholds."""
    debounce = _num(dig(ms, "sync", "watchDebounceMs"), int, 0, 3_600_000)
    if debounce is not None:
        cfg = replace(cfg, sync=replace(cfg.sync, watchDebounceMs=debounce))
    delta = table(ms, "sync", "sessions")
    db = _num(delta.get("deltaBytes"), int, 1, 10**10)
    dm = _num(delta.get("deltaMessages"), int, 1, 10**7)
    return replace(
        cfg,
        sessions=replace(
            cfg.sessions,
            deltaBytes=db or cfg.sessions.deltaBytes,
            deltaMessages=dm or cfg.sessions.deltaMessages,
        ),
    )


def _query(query: QueryConfig, q: dict[str, Any], hy: dict[str, Any]) -> QueryConfig:
    """memorySearch.query's result count and floor, and hybrid's MMR and temporal decay."""
    mr = _num(q.get("maxResults"), int, 1, 200)
    ms_ = _num(q.get("minScore"), float, 0.0, 1.0)
    query = replace(
        query, maxResults=mr or query.maxResults, minScore=query.minScore if ms_ is None else ms_
    )
    if isinstance(dig(hy, "mmr", "enabled"), bool):
        query = replace(query, stages=replace(query.stages, mmr=hy["mmr"]["enabled"]))
    lam = _num(dig(hy, "mmr", "lambda"), float, 0.0, 1.0)
    if lam is not None:
        query = replace(query, mmrLambda=lam)
    if isinstance(dig(hy, "temporalDecay", "enabled"), bool):
        query = replace(query, stages=replace(query.stages, decay=hy["temporalDecay"]["enabled"]))
    hl = _num(dig(hy, "temporalDecay", "halfLifeDays"), float, 0.01, 100_000)
    if hl is not None:
        query = replace(query, halfLifeDays=hl)
    return query


def _hybrid(hybrid: HybridConfig, hy: dict[str, Any]) -> HybridConfig:
    """memorySearch's hybrid settings: on or off, the weights, the candidate pool."""
    if isinstance(hy.get("enabled"), bool):
        hybrid = replace(hybrid, enabled=hy["enabled"])
    vw = _num(hy.get("vectorWeight"), float, 0.0, 1.0)
    tw = _num(hy.get("textWeight"), float, 0.0, 1.0)
    if vw is not None or tw is not None:  # the user chose weights: keep theirs
        hybrid = replace(
            hybrid,
            vectorWeight=hybrid.vectorWeight if vw is None else vw,
            textWeight=hybrid.textWeight if tw is None else tw,
        )
    cm = _num(hy.get("candidateMultiplier"), int, 1, 20)
    if cm is not None:
        hybrid = replace(hybrid, candidateMultiplier=cm)
    return hybrid


def _extras(items: list[Any], base: Path) -> list[ExtraPath]:
    out: list[ExtraPath] = []
    for item in items:
        if isinstance(item, str):
            out.append(ExtraPath(_path(item, base)))
        elif isinstance(item, dict) and isinstance(item.get("path"), str):
            pattern = item.get("pattern") or item.get("mask")
            out.append(
                ExtraPath(_path(item["path"], base), pattern if isinstance(pattern, str) else None)
            )
    return out


def openclaw_state_dir() -> Path:
    """OpenClaw's state dir, resolved as OpenClaw resolves it."""
    state = os.environ.get("OPENCLAW_STATE_DIR", "").strip()
    if state:
        return Path(state).expanduser()
    home = os.environ.get("OPENCLAW_HOME", "").strip()
    return (Path(home).expanduser() if home else Path.home()) / ".openclaw"


def openclaw_agent_of(workspace: Path) -> str | None:
    """The OpenClaw agent whose workspace ``workspace`` is: the one OpenClaw's own
    ``openclaw.json`` (in its state dir) names with it, else "main" for OpenClaw's
    default workspace (``~/.openclaw/workspace``); None for any other folder (or an
    ``openclaw.json`` that does not read: the folder is then not known as OpenClaw's)."""
    try:
        want = workspace.resolve()
    except (OSError, RuntimeError):  # RuntimeError: a loop of links
        return None
    path = openclaw_state_dir() / "openclaw.json"
    if path.is_file():
        try:
            for cfg in load_openclaw(path):
                if cfg.workspace is not None and cfg.workspace.resolve() == want:
                    return cfg.agent_name
        except (ConfigError, OSError, RuntimeError):
            pass
    default = Path.home() / ".openclaw" / "workspace"
    return "main" if want == default.resolve() else None


def with_openclaws_transcripts(cfg: Config) -> Config:
    """A workspace that is an OpenClaw agent's (its openclaw.json names it, or it is
    OpenClaw's default one) with no agent id and no ``sessions.dir``: that agent's
    transcripts, from OpenClaw's state dir (``$OPENCLAW_STATE_DIR`` as OpenClaw reads
    it), as if ``sessions.dir`` named them. Any other folder of notes gets none."""
    if cfg.agentId is not None or cfg.sessions.dir or not cfg.sessions.enabled:
        return cfg
    agent = None if cfg.workspace is None else openclaw_agent_of(cfg.workspace)
    if agent is None:
        return cfg
    sessions = openclaw_state_dir() / "agents" / agent / "sessions"
    return replace(cfg, sessions=replace(cfg.sessions, dir=str(sessions)))


def config_identity(path: Path) -> str | None:
    """None for OpenClaw's default config (``$OPENCLAW_CONFIG_PATH``, else its state
    dir's ``openclaw.json``); else a short hash of the resolved path."""
    given = os.environ.get("OPENCLAW_CONFIG_PATH", "").strip()
    default = Path(given).expanduser() if given else openclaw_state_dir() / "openclaw.json"
    resolved = _resolved(path)
    same = resolved == _resolved(default)
    return None if same else hashlib.sha256(str(resolved).encode()).hexdigest()[:10]


def _resolved(path: Path) -> Path:
    """``path`` with its links followed; a link to nothing, or a loop, as the name
    in its resolved folder: a config replaced by a broken link (an edit gone wrong)
    keeps the identity, and so the daemon and index, it had as a file."""
    p = Path(os.path.abspath(path.expanduser()))
    try:
        got = p.resolve()
        if got.exists() or not p.is_symlink():
            return got
    except (OSError, RuntimeError):  # a loop of links
        pass
    try:
        return p.parent.resolve() / p.name
    except (OSError, RuntimeError):
        return p


def own_installation(path: Path, cfg: Config) -> Config:
    """``cfg`` with the index and socket of the OpenClaw ``path`` configures (unread)."""
    ident = config_identity(path)
    if ident is None:
        return cfg
    home = (cfg.stateDir or state_dir()) / f"openclaw-{ident}"
    sock = cfg.server.socket or str(socket_dir(home) / f"memindex-{ident}.sock")
    return replace(cfg, stateDir=home, server=replace(cfg.server, socket=sock))


def load_openclaw(path: Path, base_cfg: Config | None = None) -> tuple[Config, ...]:
    """One Config per OpenClaw agent (the default agent first)."""
    data = read_json5(path)
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected an object at the top")
    base = path.parent
    state = openclaw_state_dir()
    cfg0 = base_cfg or Config()
    cfg0 = replace(cfg0, sessions=replace(cfg0.sessions, enabled=False))  # OpenClaw's default
    cfg0 = replace(cfg0, source=path)  # the agents come from this file
    cfg0 = own_installation(path, cfg0)
    defaults = table(data, "agents", "defaults")
    zone = defaults.get("userTimezone")
    if isinstance(zone, str) and zone.strip() and not cfg0.query.timeZone:
        try:  # OpenClaw's own zone: what "yesterday" is (a name it cannot read: the host's)
            time_zone(zone.strip())
            cfg0 = replace(cfg0, query=replace(cfg0.query, timeZone=zone.strip()))
        except ValueError:
            pass
    ms_default = _merge(table(data, "memory", "search"), table(defaults, "memorySearch"))
    qmd_paths = dig(data, "memory", "qmd", "paths")
    ws_default = defaults.get("workspace") or "~/.openclaw/workspace"

    agents: list[tuple[str, dict[str, object]]] = []
    listed = dig(data, "agents", "list")
    if isinstance(listed, list):
        agents += [(str(a["id"]), a) for a in listed if isinstance(a, dict) and a.get("id")]
    entries = dig(data, "agents", "entries")
    if isinstance(entries, dict):
        agents += [(str(k), v) for k, v in entries.items() if isinstance(v, dict)]
    if not agents:
        agents = [("main", {})]
    ids: list[str] = []  # the ids OpenClaw uses (paths, session keys), in file order;
    for raw_id, _ in agents:  # a second of one id is "<id>-2", as `openclaw doctor` has it
        want = aid = normalize_agent_id(raw_id)
        n = 2
        while aid in ids:
            aid, n = f"{want}-{n}", n + 1
        if aid != want:  # (logging loaded only then: a command the daemon answers never)
            import logging

            logging.getLogger(__name__).warning("%s: agent %r indexed as %r", path, raw_id, aid)
        ids.append(aid)
    default_first = sorted(
        zip(ids, agents, strict=True), key=lambda a: not a[1][1].get("default", a[1][0] == "main")
    )
    out: list[Config] = []
    for aid, (_, entry) in default_first:
        ms = _merge(ms_default, table(entry, "memorySearch") or table(entry, "memory", "search"))
        ws = entry.get("workspace") or ws_default
        if not isinstance(ws, str) or "\x00" in ws:
            raise ConfigError(f"{path}: agent {aid}: workspace must be a path (text, no NUL)")
        cfg = replace(
            cfg0,
            agentId=aid,
            workspace=_path(ws, base),
            sessions=replace(cfg0.sessions, dir=str(state / "agents" / aid / "sessions")),
        )
        cfg = _apply(cfg, ms, base)
        if isinstance(qmd_paths, list):
            cfg = replace(cfg, extraPaths=cfg.extraPaths + tuple(_extras(qmd_paths, base)))
        out.append(cfg)
    return tuple(out)
