"""Which embedding provider an agent's config asks for, and what to say when there is
none. Shared by the writer (``Indexer``), the read path (``Searcher``), the daemon and
the CLI's direct path."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING

from indexer.config import Config
from providers.auto import (
    Problem,
    ProviderSpec,
    Selection,
    configured,
    model_cache,
    precheck,
    select,
)
from providers.names import PROVIDERS

if TYPE_CHECKING:  # numpy: not loaded by a CLI call that has nothing to embed
    from providers.base import EmbeddingProvider
from providers.state import ProviderState

__all__ = [
    "SharedProviders",
    "ready_state",
    "NO_PROVIDER",
    "provider_note",
    "provider_spec",
    "provider_state",
    "select_provider",
]

NO_PROVIDER = "no embedding provider configured"
_SET_ONE_UP = (
    "for hybrid search run `memindex model pull e5-small --use` (a local model), or set an "
    f"API key ({', '.join(p.key_env[0] for p in PROVIDERS if p.remote)})"
)


def provider_spec(cfg: Config) -> ProviderSpec:
    p = cfg.provider
    cache = Path(p.local.modelCacheDir) if p.local.modelCacheDir else model_cache()
    local_model = p.local.modelPath
    if p.local.model:
        from providers.models import MODELS

        local_model = str(cache / MODELS[p.local.model].file)
    return ProviderSpec(
        name=p.name,
        fallback=p.fallback,
        model=p.model,
        dims=p.dims,
        local_model=local_model,
        local_name=p.local.model,
        model_cache_dir=cache,
        threads=p.local.threads,
        query_prefix=p.local.queryPrefix,
        document_prefix=p.local.documentPrefix,
        base_url=p.remote.baseUrl,
        api_key=p.remote.apiKey,
        timeout_s=p.remote.timeoutMs / 1000,
    )


def select_provider(cfg: Config) -> Selection:
    """The embedding provider this config asks for, or None with the reasons."""
    return select(provider_spec(cfg))


def provider_note(cfg: Config, sel: Selection) -> str:
    """What search and status say about a missing provider: "no embedding provider
    configured" when none was asked for, else why the one asked for (by name, or
    with ``auto`` by a model path or an API key) could not be set up."""
    if sel.provider is not None:
        return ""
    state = provider_state(cfg, sel)
    if state["state"] == "failed":
        return f"{state['name']} provider failed: {state['reason']}"
    return NO_PROVIDER if cfg.provider.name == "auto" else sel.reason


_UNKNOWN_FIX = "see memindex doctor"


def provider_state(cfg: Config, sel: Selection | None = None) -> ProviderState:
    """The configured provider and its state, for ``status``: ``ready`` (loaded),
    ``configured`` (not loaded by this process, nothing found wrong), ``failed``
    (``reason``, ``fix``), ``none`` (keyword search by choice). ``sel``: a selection
    this process made (the daemon's, the index's); without it nothing is loaded."""
    spec = provider_spec(cfg)
    if sel is not None and sel.provider is not None:
        p = sel.provider
        return ready_state(p.id, p.model)
    names = configured(spec)
    if not names:
        reason = "provider = none" if spec.name == "none" else NO_PROVIDER
        fix = None if spec.name == "none" else _SET_ONE_UP
        return ProviderState(name=None, model=None, state="none", reason=reason, fix=fix)
    problems: list[tuple[str, Problem | None]] = [(n, precheck(n, spec)) for n in names]
    if sel is not None:  # it was tried: its own reasons (and fixes) say more
        failed: list[tuple[str, Problem | None]] = [
            (n, Problem(r.split(": ", 1)[1], sel.fixes.get(n) or _fix_of(problems, n)))
            for r in sel.reasons
            for n in names
            if r.startswith(f"{n}: ")
        ]
        problems = failed or [
            (n, why or Problem("could not be set up", _UNKNOWN_FIX)) for n, why in problems
        ]
    bad = [(n, why) for n, why in problems if why]
    if sel is None and len(bad) < len(names):
        name = next(n for n, why in problems if not why)
        return ProviderState(
            name=name, model=spec.model or None, state="configured", reason=None, fix=None
        )
    name, why = bad[0] if bad else (names[0], Problem("could not be set up", _UNKNOWN_FIX))
    assert why is not None
    return ProviderState(
        name=name, model=spec.model or None, state="failed", reason=why.reason, fix=why.fix
    )


def _fix_of(problems: list[tuple[str, Problem | None]], name: str) -> str:
    """The pre-flight check's fix for ``name``, else a pointer to doctor."""
    found = next((p for n, p in problems if n == name and p is not None), None)
    return found.fix if found is not None else _UNKNOWN_FIX


def ready_state(name: str, model: str | None) -> ProviderState:
    """The state of a provider this process has loaded."""
    return ProviderState(name=name, model=model, state="ready", reason=None, fix=None)


class SharedProviders:
    """The embedding providers of one daemon's agents: one per distinct provider
    configuration, shared by every agent that has it. A local model is then loaded
    once, not once per agent (about 125 MB of RSS each with all-MiniLM-L6-v2: 12 GB
    for 100 agents). A provider is already used by several threads at once (each
    search embeds its query; a llama.cpp context is behind a lock), so agents
    sharing one adds no new kind of use. Closed when its last agent lets go."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[ProviderSpec, tuple[Selection, int]] = {}

    def select(self, cfg: Config) -> Selection:
        spec = provider_spec(cfg)
        with self._lock:  # agents start one after another: a model is loaded once
            got = self._held.get(spec)
            if got is not None:
                self._held[spec] = (got[0], got[1] + 1)
                return got[0]
            sel = select(spec)
            if sel.provider is not None:
                self._held[spec] = (sel, 1)
            return sel

    def release(self, provider: EmbeddingProvider | None) -> None:
        """One agent is done with ``provider``: closed if no other agent has it."""
        if provider is None:
            return
        with self._lock:
            for spec, (sel, n) in list(self._held.items()):
                if sel.provider is provider:
                    if n > 1:
                        self._held[spec] = (sel, n - 1)
                        return
                    del self._held[spec]
                    break
        provider.close()

    def __len__(self) -> int:
        return len(self._held)
