"""Transcripts of OpenClaw's agent database as memindex names and renders them: the
path a session's transcript has in the index (``sessions/<agent>/<session id>.jsonl``)
and its events rendered as messages. Reading the database itself is
``agent_db`` (the only code that opens it)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from indexer.sources.transcripts.messages import Messages
from indexer.sources.transcripts.sessions import SESSIONS_SOURCE, Malformed, parse_message

__all__ = ["db_path", "is_db_path", "parse_db_path", "render_events"]

# OpenClaw's session ids: a letter or digit, then letters, digits, marks, . _ -
_SESSION_ID = re.compile(r"^[^\W_][\w.\-]{0,127}$")


def db_path(agent: str, session_id: str) -> str:
    return f"{SESSIONS_SOURCE}/{agent}/{session_id}.jsonl"


def is_db_path(path: str) -> bool:
    """A transcript of the database (``sessions/<agent>/<id>.jsonl``), not a file
    (``sessions/<name>``) nor another source's."""
    return path.startswith(SESSIONS_SOURCE + "/") and path.count("/") == 2


def parse_db_path(path: str, agent: str) -> str | None:
    """The session id a database transcript path names for ``agent``, or None."""
    parts = path.split("/")
    if len(parts) != 3 or parts[0] != SESSIONS_SOURCE or parts[1].lower() != agent.lower():
        return None
    name = parts[2]
    if not name.endswith(".jsonl"):
        return None
    sid = name[: -len(".jsonl")]
    return sid if _SESSION_ID.match(sid) else None


def render_events(events: Iterable[tuple[int, str | None]]) -> tuple[Messages, int]:
    """(the messages, each on its line ``seq + 1``; events that could not be read)."""
    msgs = Messages()
    bad = 0
    for seq, text in events:
        if text is None:
            bad += 1
            continue
        try:
            msg = parse_message(text.encode("utf-8", "surrogatepass"))
        except Malformed:
            bad += 1
            continue
        if msg is not None:
            msgs.add(msg, seq + 1)
    return msgs, bad
