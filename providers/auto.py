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

from .errors import MissingCredentials, ProviderError
from .names import ORDER

if TYPE_CHECKING:
    from .base import EmbeddingProvider

__all__ = ["ProviderSpec", "Selection", "configured", "precheck", "select"]


REMOTE = {  # name -> (module, class), imported only when chosen
    "openai": (".openai_provider", "OpenAIProvider"),
    "gemini": (".gemini_provider", "GeminiProvider"),
    "voyage": (".voyage_provider", "VoyageProvider"),
}
KEY_ENV = {
    "openai": ("OPENAI_API_KEY",),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "voyage": ("VOYAGE_API_KEY",),
}


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

    @property
    def reason(self) -> str:
        return "; ".join(self.reasons) if self.reasons else ""


def api_key(name: str, spec: ProviderSpec) -> str | None:
    if spec.api_key:
        return spec.api_key
    for var in KEY_ENV.get(name, ()):
        if os.environ.get(var):
            return os.environ[var]
    return None


def build(name: str, spec: ProviderSpec) -> EmbeddingProvider:
    """Build one provider by name; raises ProviderError (MissingCredentials if it
    cannot be configured here)."""
    if name == "local":
        problem = _local_file_problem(spec)
        if problem:
            raise MissingCredentials(problem)
        from .local_gguf import LocalGGUFProvider, resolve_model

        path = resolve_model(spec.local_model, spec.model_cache_dir, timeout=spec.timeout_s)
        return LocalGGUFProvider(
            path,
            threads=spec.threads or None,
            query_prefix=spec.query_prefix or None,
            document_prefix=spec.document_prefix or None,
        )
    if name in REMOTE:
        key = api_key(name, spec)
        if not key:
            raise MissingCredentials(
                f"no {name} API key: set {' or '.join(KEY_ENV[name])} or provider.remote.apiKey"
            )
        module, cls = REMOTE[name]
        provider_cls = getattr(importlib.import_module(module, __package__), cls)
        built: EmbeddingProvider = provider_cls(
            key, model=spec.model, dims=spec.dims, base_url=spec.base_url, timeout=spec.timeout_s
        )
        return built
    raise ProviderError(f"unknown provider {name!r}")


_PACKAGES = {"local": "llama_cpp", "openai": "openai", "gemini": "google.genai",
             "voyage": "voyageai"}  # fmt: skip


def configured(spec: ProviderSpec) -> list[str]:
    """The providers the user asked for: the one named, or with ``auto`` each that
    has a model path or an API key set (an empty list: keyword search by choice)."""
    if spec.name == "none":
        return []
    if spec.name != "auto":
        return [spec.name]
    names = ["local"] if spec.local_model else []
    return names + [n for n in REMOTE if api_key(n, spec)]


def _local_file_problem(spec: ProviderSpec) -> str | None:
    """Why the local model file is not there (an ``hf:`` URI is fetched on use)."""
    if not spec.local_model:
        return "no local model configured (provider.local.model or modelPath)"
    if spec.local_model.startswith("hf:"):
        return None
    path = Path(os.path.expanduser(spec.local_model))
    if path.is_file():
        return None
    if spec.local_name:
        return (
            f"local model {spec.local_name} is not pulled ({path} does not exist): "
            f"run memindex model pull {spec.local_name}"
        )
    return f"local model file {path} does not exist"


def precheck(name: str, spec: ProviderSpec) -> str | None:
    """Why ``name`` cannot work here, found without loading anything (a missing model
    file, package or key), or None."""
    if name == "local":
        problem = _local_file_problem(spec)
        if problem:
            return problem
    elif name in REMOTE and not api_key(name, spec):
        return f"no {name} API key: set {' or '.join(KEY_ENV[name])} or provider.remote.apiKey"
    package = _PACKAGES.get(name)
    if package is not None:
        try:
            found = importlib.util.find_spec(package) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            return f"the {name} provider needs the Python package {package.split('.')[0]}"
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
        except MissingCredentials as exc:
            sel.reasons.append(f"{name}: {exc.message}")
        except ProviderError as exc:
            sel.reasons.append(f"{name}: {exc.message}")
            if spec.name != "auto":
                break
    if spec.fallback not in ("none", "", *names):
        try:
            sel.provider = build(spec.fallback, replace(spec, model="", dims=0))
            sel.reasons.append(f"using the fallback provider {spec.fallback}")
        except ProviderError as exc:
            sel.reasons.append(f"fallback {spec.fallback}: {exc.message}")
    return sel
