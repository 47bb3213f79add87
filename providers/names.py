"""The embedding providers by name, in the order ``auto`` tries them. Imported by
the config check without loading any provider code."""

from __future__ import annotations

__all__ = ["ORDER"]

ORDER = ("local", "openai", "gemini", "voyage")
