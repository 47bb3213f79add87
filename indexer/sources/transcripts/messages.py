"""A transcript's messages as they are read: rendered, each with its transcript line
and its time (``timestamp``, ISO 8601), for ``indexing.transcripts.source.transcript_rows``."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from indexer.sources.transcripts.sessions import Message

__all__ = ["Messages", "message_time"]


def message_time(stamp: str | None) -> float | None:
    """A message's ``timestamp`` (ISO 8601; UTC when it names no zone) as epoch
    seconds; None when it is missing or not a time between 1970 and 9999."""
    if not stamp or len(stamp) > 40:
        return None
    try:
        t = datetime.fromisoformat(stamp.strip())
    except ValueError:
        return None
    if t.tzinfo is None:
        t = t.replace(tzinfo=UTC)
    try:
        sec = t.timestamp()
    except (OverflowError, OSError, ValueError):
        return None
    return sec if sec >= 0 else None


@dataclass
class Messages:
    """Rendered messages of a transcript, their lines and times, as read."""

    texts: list[str] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)
    times: list[float | None] = field(default_factory=list)
    # each message's provenance class (``sessions.ORIGINS``)
    origins: list[str] = field(default_factory=list)
    # the class of the last user message read: an assistant message's (OpenClaw's
    # turn origin; an assistant message whose turn began before these lines:
    # untrusted, as memory-core starts a transcript)
    turn: str = "untrusted"

    def add(self, msg: Message, line: int) -> None:
        self.texts.append(msg.render())
        self.lines.append(line)
        self.times.append(message_time(msg.timestamp))
        origin = msg.origin
        if msg.role == "user":
            self.turn = origin
        elif origin == "tainted":
            origin = "untrusted"
        else:  # the turn's: an owner's turn is answered by the agent
            origin = "agent" if self.turn == "owner" else self.turn
        self.origins.append(origin)

    def __len__(self) -> int:
        return len(self.texts)
