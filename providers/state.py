"""A configured embedding provider's state as memindex reports it (``status``)."""

from __future__ import annotations

from typing import TypedDict

__all__ = ["ProviderState"]


class ProviderState(TypedDict):
    name: str | None
    model: str | None
    state: str  # ready | configured (not loaded here) | failed | none
    reason: str | None  # failed, none: why
    fix: str | None  # failed: what to do
