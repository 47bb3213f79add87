"""Which embedding provider an agent's config asks for, and what to say when there is
none. Shared by the writer (``Indexer``), the read path (``Searcher``), the daemon and
the CLI's direct path."""

from __future__ import annotations

from pathlib import Path

from indexer.config import Config
from providers.auto import ProviderSpec, Selection, select

__all__ = ["NO_PROVIDER", "provider_note", "provider_spec", "select_provider"]

NO_PROVIDER = "no embedding provider configured"


def provider_spec(cfg: Config) -> ProviderSpec:
    p = cfg.provider
    cache = Path(p.local.modelCacheDir) if p.local.modelCacheDir else None
    return ProviderSpec(
        name=p.name,
        fallback=p.fallback,
        model=p.model,
        dims=p.dims,
        local_model=p.local.modelPath,
        model_cache_dir=cache or ProviderSpec().model_cache_dir,
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
    """What search and status say about the provider. With ``auto`` and nothing set
    up, the short "no embedding provider configured" (``memindex doctor`` lists what
    was tried); a provider that was asked for by name says why it is missing."""
    if sel.provider is None and cfg.provider.name == "auto":
        return NO_PROVIDER
    return sel.reason
