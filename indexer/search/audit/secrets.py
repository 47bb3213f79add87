"""``secrets``: memory files holding what the transcripts' redaction would take out
(``redaction.find_secrets``: which pattern, which line). Memory files are indexed
and shown as written, so a key pasted into a daily log is in every search that
finds it. A value that is plainly not a secret is left alone: a vendor's documented
example (``AKIAIOSFODNN7EXAMPLE``, the test card 4242 4242 4242 4242), a
placeholder (``<your-token>``, ``xxxxxxxx``, ``${API_KEY}``). The finding shows the
secret's first characters only."""

from __future__ import annotations

import re

from indexer.api import AuditFinding
from indexer.errors import checkpoint
from indexer.sources.redaction import find_secrets

__all__ = ["is_placeholder", "secret_findings"]

MAX_LINE = 20_000  # a longer line is read to here

# Numbers payment networks publish for tests (Visa, Mastercard, Amex, Discover...).
_TEST_CARDS = frozenset(
    ("4242424242424242", "4111111111111111", "4000056655665556", "5555555555554444")
    + ("5105105105105100", "378282246310005", "371449635398431", "6011111111111117")
    + ("4012888888881881", "3530111333300000", "30569309025904", "5200828282828210")
)
_PLACEHOLDER = re.compile(
    r"example|placeholder|dummy|redacted|your[_\-]?|<[^>]*>|^\$|^%|\{\{|x{4,}|\*{3,}|\.{3}|…",
    re.I,
)


def is_placeholder(secret: str) -> bool:
    """``secret`` is a documented example or a placeholder, not a secret."""
    digits = re.sub(r"[ -]", "", secret)
    if digits in _TEST_CARDS:
        return True
    core = secret.strip("\"'`")
    return bool(_PLACEHOLDER.search(core)) or len(set(core.lower())) <= 3


def _masked(secret: str) -> str:
    return secret[:4] + "…" if len(secret) > 8 else "…"


def secret_findings(files: dict[str, list[str]]) -> list[AuditFinding]:
    out: list[AuditFinding] = []
    for path, lines in files.items():
        checkpoint()
        for n, line in enumerate(lines):
            found = [(k, s) for k, s in find_secrets(line[:MAX_LINE]) if not is_placeholder(s)]
            if not found:
                continue
            what, secret = found[0]
            out.append(
                {
                    "kind": "secrets",
                    "path": path,
                    "startLine": n + 1,
                    "endLine": n + 1,
                    "message": f"holds {what} ({_masked(secret)}), shown in every search that "
                    "finds it",
                    "suggestion": "move it to a password manager or the agent's secret "
                    "store, and rotate it if it was shared",
                    "pattern": what,
                }
            )
    return out
