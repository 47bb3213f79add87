"""The embedding providers memindex knows, declared once: ``PROVIDERS``, one
``ProviderInfo`` each, in the order ``auto`` tries them. Auto-selection, the
pre-flight check, the config's choices, OpenClaw config import and the hints shown
to users all read this table (adding a provider is an entry here plus its module).
Imported by the config check without loading any provider code."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["KEY_VARIABLES", "ORDER", "PROVIDERS", "REMOTE_LABELS", "ProviderInfo", "info"]


@dataclass(frozen=True)
class ProviderInfo:
    name: str  # as the config names it (provider.name)
    module: str  # the module under providers/ that holds ``cls``
    cls: str
    package: str  # the Python package its module needs (an import name)
    extra: str  # the optional dependency group that installs it (pyproject)
    key_env: tuple[str, ...] = ()  # environment variables holding its API key (remote)
    label: str = ""  # as a person writes it (default: the name)

    @property
    def remote(self) -> bool:
        return bool(self.key_env)


PROVIDERS: tuple[ProviderInfo, ...] = (
    ProviderInfo("local", ".local_gguf", "LocalGGUFProvider", "llama_cpp", "local"),
    ProviderInfo("openai", ".openai_provider", "OpenAIProvider", "openai", "openai",
                 ("OPENAI_API_KEY",), "OpenAI"),
    ProviderInfo("gemini", ".gemini_provider", "GeminiProvider", "google.genai", "gemini",
                 ("GEMINI_API_KEY", "GOOGLE_API_KEY"), "Gemini"),
    ProviderInfo("voyage", ".voyage_provider", "VoyageProvider", "voyageai", "voyage",
                 ("VOYAGE_API_KEY",), "Voyage"),
)  # fmt: skip

ORDER = tuple(p.name for p in PROVIDERS)
# For help texts: "OPENAI_API_KEY, GEMINI_API_KEY or GOOGLE_API_KEY, VOYAGE_API_KEY"
# and "OpenAI / Gemini / Voyage".
KEY_VARIABLES = ", ".join(" or ".join(p.key_env) for p in PROVIDERS if p.remote)
REMOTE_LABELS = " / ".join(p.label or p.name for p in PROVIDERS if p.remote)


def info(name: str) -> ProviderInfo | None:
    """The provider named ``name`` (None: no such provider)."""
    return next((p for p in PROVIDERS if p.name == name), None)
