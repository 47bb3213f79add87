"""Provider selection: local GGUF -> OpenAI -> Gemini -> Voyage -> none.

``select`` returns the first provider that can be built (a configured and resolvable
local model; else the first remote provider whose API key resolves) or None with the
reasons, so callers can run keyword-only and say why.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import MissingCredentials, ProviderError, package_fix
from .names import ORDER, PROVIDERS, info

if TYPE_CHECKING:
    from .base import EmbeddingProvider

__all__ = ["Problem", "ProviderSpec", "Selection", "configured", "precheck", "select"]


REMOTE = tuple(p.name for p in PROVIDERS if p.remote)  # the providers an API key selects


@dataclass(frozen=True)
class Problem:
    """Why a provider cannot work here, and what the user can do about it."""

    reason: str
    fix: str


def _no_key(name: str) -> Problem:
    p = info(name)
    env = " or ".join(p.key_env) if p is not None else "its API key"
    how = f"set {env} or provider.remote.apiKey"
    return Problem(f"no {name} API key: {how}", how)


def model_cache() -> Path:
    """Where models are kept: ``$MEMINDEX_MODEL_CACHE``, else
    ``$XDG_CACHE_HOME/memindex/models`` (else ``~/.cache``)."""
    env = os.environ.get("MEMINDEX_MODEL_CACHE", "").strip()
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    return (Path(xdg) if xdg else Path.home() / ".cache") / "memindex" / "models"


@dataclass(frozen=True)
class ProviderSpec:
    name: str = "auto"  # auto | local | openai | gemini | voyage | none
    fallback: str = "none"  # tried when the chosen provider cannot be built
    model: str = ""
    dims: int = 0
    local_model: str = ""  # path or hf: URI
    local_name: str = ""  # the catalogue name local_model was resolved from (model pull)
    model_cache_dir: Path = field(default_factory=lambda: model_cache())
    threads: int = 0
    query_prefix: str = ""  # "" = the model file's own
    document_prefix: str = ""
    base_url: str = ""
    api_key: str = ""
    timeout_s: float = 60.0


@dataclass
class Selection:
    provider: EmbeddingProvider | None
    reasons: list[str] = field(default_factory=list)  # why earlier candidates were skipped
    fixes: dict[str, str] = field(default_factory=dict)  # provider name -> what to do

    @property
    def reason(self) -> str:
        return "; ".join(self.reasons) if self.reasons else ""


def api_key(name: str, spec: ProviderSpec) -> str | None:
    if spec.api_key:
        return spec.api_key
    p = info(name)
    for var in p.key_env if p is not None else ():
        if os.environ.get(var):
            return os.environ[var]
    return None


def build(name: str, spec: ProviderSpec) -> EmbeddingProvider:
    """Build one provider by name; raises ProviderError (MissingCredentials if it
    cannot be configured here)."""
    if name == "local":
        problem = _local_file_problem(spec)
        if problem:
            raise MissingCredentials(problem.reason, fix=problem.fix)
        from .local_gguf import LocalGGUFProvider, resolve_model

        path = resolve_model(spec.local_model, spec.model_cache_dir, timeout=spec.timeout_s)
        return LocalGGUFProvider(
            path,
            threads=spec.threads or None,
            query_prefix=spec.query_prefix or None,
            document_prefix=spec.document_prefix or None,
        )
    p = info(name)
    if p is not None and p.remote:
        key = api_key(name, spec)
        if not key:
            problem = _no_key(name)
            raise MissingCredentials(problem.reason, fix=problem.fix)
        provider_cls = getattr(importlib.import_module(p.module, __package__), p.cls)
        built: EmbeddingProvider = provider_cls(
            key, model=spec.model, dims=spec.dims, base_url=spec.base_url, timeout=spec.timeout_s
        )
        return built
    raise ProviderError(f"unknown provider {name!r}")


def configured(spec: ProviderSpec) -> list[str]:
    """The providers the user asked for: the one named, or with ``auto`` each that
    has a model path or an API key set (an empty list: keyword search by choice)."""
    if spec.name == "none":
        return []
    if spec.name != "auto":
        return [spec.name]
    names = ["local"] if spec.local_model else []
    return names + [n for n in REMOTE if api_key(n, spec)]


_BY_NAME = "memindex model pull e5-small --use (a local model by name; sets provider.local.model)"


def _local_file_problem(spec: ProviderSpec) -> Problem | None:
    """Why the local model file is not there (an ``hf:`` URI is fetched on use)."""
    if not spec.local_model:
        return Problem("no local model configured (provider.local.model or modelPath)", _BY_NAME)
    if spec.local_model.startswith("hf:"):
        return None
    path = Path(os.path.expanduser(spec.local_model))
    if path.is_file():
        return None
    if spec.local_name:
        pull = f"memindex model pull {spec.local_name}"
        return Problem(
            f"local model {spec.local_name} is not pulled ({path} does not exist): run {pull}",
            pull,
        )
    return Problem(f"local model file {path} does not exist", "put the file there, or " + _BY_NAME)


def precheck(name: str, spec: ProviderSpec) -> Problem | None:
    """Why ``name`` cannot work here, found without loading anything (a missing model
    file, package or key), or None."""
    if name == "local":
        problem = _local_file_problem(spec)
        if problem:
            return problem
    elif name in REMOTE and not api_key(name, spec):
        return _no_key(name)
    p = info(name)
    if p is not None:
        try:
            found = importlib.util.find_spec(p.package) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            return Problem(
                f"the {name} provider needs the Python package {p.package.split('.')[0]}",
                package_fix(p.extra),
            )
    return None


def select(spec: ProviderSpec) -> Selection:
    """The provider to use, or None with the reasons. ``fallback`` takes over when the
    chosen provider (or every one ``auto`` tried) cannot be built; it uses its own
    default model (the primary's model name rarely exists elsewhere)."""
    if spec.name == "none":
        return Selection(None, ["provider = none: keyword search only"])
    names = ORDER if spec.name == "auto" else (spec.name,)
    sel = Selection(None)
    for name in names:
        try:
            sel.provider = build(name, spec)
            return sel
        except ProviderError as exc:
            sel.reasons.append(f"{name}: {exc.message}")
            if exc.fix:
                sel.fixes[name] = exc.fix
    if spec.fallback not in ("none", "", *names):
        try:
            sel.provider = build(spec.fallback, replace(spec, model="", dims=0))
            sel.reasons.append(f"using the fallback provider {spec.fallback}")
        except ProviderError as exc:
            sel.reasons.append(f"fallback {spec.fallback}: {exc.message}")
    return sel
