"""``bootstrap``: the part of MEMORY.md and USER.md a session never sees.

OpenClaw (2026.9.6, ``trimBootstrapContent``) injects each bootstrap file at session
start, its end's whitespace trimmed; one longer than its cap keeps its head (75% of
what the cap leaves after a truncation marker) and its tail (25%) and drops the
middle. The caps: ``agents.defaults.bootstrapMaxChars`` (20,000) per file, USER.md
at most 4,000, and ``bootstrapTotalMaxChars`` (60,000) for all of them, spent in
OpenClaw's order (AGENTS.md, SOUL.md, IDENTITY.md, USER.md, BOOTSTRAP.md,
MEMORY.md: ``budgets``), a required file that is missing spending its "[MISSING]"
line; with under 64 characters left, a file is not injected at all. Lengths are
JavaScript's: UTF-16 code units. Every entry that lies in the dropped middle is a
finding, the most recalled first (the times the agent's searches returned it,
``recall_tally``: what to move up first).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from indexer.api import AuditFinding
from indexer.config.text_file import read_json5
from indexer.errors import ConfigError
from indexer.openclaw import dig, openclaw_state_dir
from indexer.search.audit.notes import Entry
from indexer.search.recall_tally import line_key

__all__ = ["Caps", "bootstrap_findings", "budgets", "hidden_span"]

USER_MAX = 4_000  # USER.md's own cap (USER_BOOTSTRAP_MAX_CHARS)
MIN_FILE_BUDGET = 64  # less left of the total: the file is not injected
ORDER = ("AGENTS.md", "SOUL.md", "IDENTITY.md", "USER.md", "BOOTSTRAP.md", "MEMORY.md")
REQUIRED = ("AGENTS.md", "SOUL.md", "IDENTITY.md")  # a "[MISSING]" line when absent
HEAD_RATIO, TAIL_RATIO = 0.75, 0.25


@dataclass(frozen=True)
class Caps:
    max_chars: int = 20_000
    total_max_chars: int = 60_000
    source: str = "OpenClaw's defaults"

    def of(self, name: str) -> int:
        cap = min(self.max_chars, USER_MAX) if name == "USER.md" else self.max_chars
        return max(1, min(cap, self.total_max_chars))


def _units(text: str) -> int:
    """``text``'s length as JavaScript counts it (UTF-16 code units)."""
    return len(text) + sum(1 for c in text if ord(c) > 0xFFFF)


def _marker(name: str, head: int, tail: int, total: int) -> str:
    return (
        f"\n[...truncated, read {name} for full content...]\n"
        f"…(truncated {name}: kept {head}+{tail} chars of {total})…\n"
    )


def budgets(caps: Caps, texts: Mapping[str, str], workspace: str) -> dict[str, int]:
    """Each bootstrap file's cap once the files before it took their share of the
    total (0: none left, the file is not injected). ``texts``: the files there."""
    left = caps.total_max_chars
    out: dict[str, int] = {}
    for name in ORDER:
        text = texts.get(name)
        if text is None:
            if name in REQUIRED:
                left -= min(left, _units(f"[MISSING] Expected at: {workspace}/{name}"))
            continue
        if left < MIN_FILE_BUDGET:
            out[name] = 0
            continue
        out[name] = cap = max(1, min(caps.of(name), left))
        left -= _injected(name, text, cap)
    return out


def _injected(name: str, text: str, cap: int) -> int:
    """How much of the total a file injected under ``cap`` takes. AGENTS.md cut is
    taken at its cap: OpenClaw cuts it another way (head, a digest of its rules,
    tail) that may leave some of the cap unused, so what MEMORY.md is found to be
    given may be less than OpenClaw gives it (by up to a third of that cap)."""
    total = _units(text.rstrip())
    if total <= cap or name == "AGENTS.md":
        return min(total, cap)
    head, tail, marker = _split(name, total, cap)
    return head + tail + marker + int(head > 0) + int(tail > 0)


def hidden_span(name: str, text: str, cap: int) -> tuple[int, int] | None:
    """The (start, end) UTF-16 offsets of the part of ``text`` a session does not
    see under ``cap``, None when all of it is seen (OpenClaw's head/tail split; a
    cap of 0: the file is not injected, all of it unseen)."""
    total = _units(text.rstrip())
    if total <= cap:
        return None
    if cap <= 0:
        return 0, total
    head, tail, _marker_len = _split(name, total, cap)
    return head, total - tail


def _split(name: str, total: int, cap: int) -> tuple[int, int, int]:
    """(head, tail, the marker's length) of a ``total``-unit file cut to ``cap``, as
    ``trimBootstrapContent`` settles them."""

    def sep(head: int, tail: int) -> int:
        return int(head > 0) + int(tail > 0)

    head = tail = 0
    marker = _marker(name, 0, 0, total)
    for _ in range(3):  # the marker's numbers change its length: settle them
        room = max(0, cap - len(marker) - sep(head, tail))
        h, t = int(room * HEAD_RATIO), int(room * TAIL_RATIO)
        m = _marker(name, h, t, total)
        if (h, t, len(m)) == (head, tail, len(marker)):
            break
        head, tail, marker = h, t, m
    while head + tail + len(marker) + sep(head, tail) > cap and (head or tail):
        over = head + tail + len(marker) + sep(head, tail) - cap
        if tail:
            tail = max(0, tail - over)
        else:
            head = max(0, head - over)
        marker = _marker(name, head, tail, total)
    return head, tail, len(marker)


def _line_starts(text: str) -> list[int]:
    """The UTF-16 offset at which each line of ``text`` starts."""
    starts, pos = [0], 0
    for line in text.split("\n"):
        pos += _units(line) + 1
        starts.append(pos)
    return starts


def _times(e: Entry, lines: list[str], recalled: Mapping[str, int]) -> int:
    """The times the agent's searches returned entry ``e`` (its most recalled line)."""
    keys = (line_key(e.path, line) for line in lines[e.start - 1 : e.end])
    return max((recalled.get(k, 0) for k in keys if k is not None), default=0)


def bootstrap_findings(
    texts: dict[str, str],
    entries: list[Entry],
    caps: dict[str, int],
    recalled: Mapping[str, int],
    source: str,
) -> list[AuditFinding]:
    """One finding per curated file cut (its first unseen line, how many entries are
    past it) and one per entry in the unseen part, wholly or in part, the most
    recalled first. ``caps``: each file's (``budgets``); ``source``: where they come
    from."""
    out: list[AuditFinding] = []
    for name, text in texts.items():
        cap = caps.get(name, 0)
        span = hidden_span(name, text, cap)
        if span is None:
            continue
        starts = _line_starts(text)
        lines = text.split("\n")
        times = {e: _times(e, lines, recalled) for e in entries if e.path == name}

        first = next(n for n in range(len(starts)) if starts[n + 1] > span[0]) + 1
        last = max(first, next(n for n in range(len(starts)) if starts[n + 1] > span[1]))
        hidden = [
            e
            for e in entries
            if e.path == name and starts[e.start - 1] < span[1] and starts[e.end] - 1 > span[0]
        ]
        hidden.sort(key=lambda e: (-times[e], e.start))
        out.append(
            {
                "kind": "bootstrap",
                "path": name,
                "startLine": first,
                "endLine": last,
                "message": (
                    f"{name} is {_units(text.rstrip()):,} characters, over the {cap:,} "
                    f"it is given ({source}; the files OpenClaw loads before it share the "
                    f"total): lines {first}-{last} ({len(hidden)} entries) are cut from "
                    "every session's context"
                ),
                "suggestion": (
                    "move what the agent must always know above line "
                    f"{first}, and the rest to a note under memory/ (it stays searchable)"
                ),
            }
        )
        out += [_hidden_entry(e, times[e]) for e in hidden]
    return out


def _hidden_entry(e: Entry, recalled: int) -> AuditFinding:
    """The finding for an entry past the cap (``recalled``: times searches found it)."""
    finding: AuditFinding = {
        "kind": "bootstrap",
        "path": e.path,
        "startLine": e.start,
        "endLine": e.end,
        "message": "not in any session's context (past the bootstrap cap)",
        "suggestion": "move it up if the agent needs it at every start, else out",
        "snippet": e.text[:200],
    }
    if recalled:
        finding["recalled"] = recalled
    return finding


def bootstrap_caps(path: Path | None = None) -> tuple[int, int, str]:
    """OpenClaw's caps on the bootstrap files injected at session start: (per file,
    all files, where they come from): ``agents.defaults.bootstrapMaxChars`` and
    ``bootstrapTotalMaxChars`` of the OpenClaw config ``path`` (an agent loaded with
    ``--openclaw-config``), else of OpenClaw's own (``$OPENCLAW_CONFIG_PATH``, its
    state dir's ``openclaw.json``), else its defaults (20,000 and 60,000). As
    OpenClaw reads them: a finite number above 0, rounded down."""
    if path is None or path.suffix not in (".json", ".json5"):
        given = os.environ.get("OPENCLAW_CONFIG_PATH", "").strip()
        path = Path(given).expanduser() if given else openclaw_state_dir() / "openclaw.json"
    per, total = 20_000, 60_000
    if not path.is_file():
        return per, total, "OpenClaw's defaults"
    try:
        data = read_json5(path)
    except (ConfigError, OSError) as exc:
        return per, total, f"OpenClaw's defaults: {exc}"
    defaults = dig(data, "agents", "defaults")
    if not isinstance(defaults, dict):
        return per, total, f"OpenClaw's defaults ({path} sets none)"
    got = [_chars(defaults.get(k)) for k in ("bootstrapMaxChars", "bootstrapTotalMaxChars")]
    per = got[0] or per
    total = got[1] or max(per, total)
    return per, total, str(path) if any(got) else f"OpenClaw's defaults ({path} sets none)"


def _chars(value: Any) -> int | None:
    """A cap as OpenClaw takes it: a finite number above 0, rounded down (1e3 and
    1234.7 too); anything else is not set."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not math.isfinite(value) or value < 1:
        return None
    return int(value)
