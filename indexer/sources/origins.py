"""Who said what a transcript holds, as OpenClaw 2026.9 marks it and memory-core
reads it (``resolveChunkProvenance``): each message's provenance class, a chunk's
(its least trusted message's), and a session's kind."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["ORIGINS", "least_trusted", "message_origin", "session_kind"]


# Provenance classes, most trusted first (OpenClaw's order): a chunk of several
# messages has its least trusted one's class.
ORIGINS = ("owner", "agent", "system", "untrusted")


def message_origin(role: str, body: dict[str, Any]) -> str:
    """Who said a message, as OpenClaw 2026.9 marks it (memory-core's
    ``classifySessionMessageOrigin``): a user message is ``system`` when OpenClaw sent
    it (``provenance.kind`` "internal_system"), ``owner`` when its sender is the
    owner (``__openclaw.senderIsOwner``), else ``untrusted``; an assistant message is
    ``tainted`` when OpenClaw marked its turn so, else its turn's (``turn``)."""
    marks = body.get("__openclaw")
    marks = marks if isinstance(marks, dict) else {}
    if role == "assistant":
        return "tainted" if marks.get("turnTainted") is True else "turn"
    prov = body.get("provenance")
    if isinstance(prov, dict) and prov.get("kind") == "internal_system":
        return "system"
    return "owner" if marks.get("senderIsOwner") is True else "untrusted"


def least_trusted(origins: Iterable[str]) -> str:
    """The least trusted of ``origins`` (``ORIGINS``' order); untrusted for none."""
    rank = max((ORIGINS.index(o) for o in origins if o in ORIGINS), default=len(ORIGINS) - 1)
    return ORIGINS[rank]


def session_kind(key: str) -> str:
    """A transcript's session kind as memory-core names it, from its session key
    (``heading`` of a database transcript): "subagent" or "interactive"; "unknown"
    for a transcript file no key names (cron, heartbeat and dreaming sessions are
    never indexed)."""
    if not key:
        return "unknown"
    return "subagent" if ":subagent:" in key else "interactive"
