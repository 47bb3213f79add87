"""``memory_audit``: what is wrong with the memory itself, each finding with its
file, lines and a one-line suggestion; it reads, never writes.

* ``bootstrap`` (``bootstrap``): MEMORY.md and USER.md past OpenClaw's caps;
* ``stale`` (``stale``): curated entries a later dated note changed;
* ``duplicates``, ``conflicts`` (``pairs``): curated entries that say the same
  thing, or the same thing with another value (``facts``: what both read);
* ``unfindable`` (``recall``): curated entries their own words do not find;
* ``secrets`` (``secrets``): memory files holding what transcript redaction removes.

``notes`` reads the files, under memory_get's rules. The package imports the
search layer's pieces and lower layers only; the searcher hands it its ``search``.

Siblings it may import: ``search.documents``, ``search.query``, ``search.recall_tally``,
``search.stages.supersede``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from indexer.api import (
    AUDIT_KINDS,
    AuditFinding,
    AuditRequest,
    AuditResponse,
    SearchRequest,
    SearchResponse,
)
from indexer.config import Config
from indexer.search.audit.bootstrap import Caps, bootstrap_caps, bootstrap_findings, budgets
from indexer.search.audit.notes import read_notes
from indexer.search.audit.pairs import pair_findings
from indexer.search.audit.recall import unfindable_findings
from indexer.search.audit.secrets import secret_findings
from indexer.search.audit.stale import stale_findings
from indexer.sources.redaction import redact

__all__ = ["ORDER", "audit"]

# The most important first: a secret to move, a wrong answer, two answers, what the
# session never sees, then tidying.
ORDER = ("secrets", "stale", "conflicts", "bootstrap", "duplicates", "unfindable")


def audit(
    cfg: Config,
    req: AuditRequest,
    paths: list[str],
    search: Callable[[SearchRequest], SearchResponse],
    recalled: Mapping[str, int] | None = None,
) -> AuditResponse:
    """The audit of the memory files ``paths`` (the index's, as it names them) and
    the curated files; ``recalled``: times the agent's searches returned each curated
    line (``recall_tally``), when known."""
    kinds = req.kinds or AUDIT_KINDS
    notes = read_notes(cfg, paths)
    per, total, source = bootstrap_caps(cfg.source)  # an --openclaw-config file's caps
    caps = Caps(per, total, source)
    given = budgets(caps, {**notes.bootstrap_text, **notes.curated_text}, str(cfg.workspace or ""))
    found: list[AuditFinding] = []
    asked = 0
    if "bootstrap" in kinds:
        found += bootstrap_findings(
            notes.curated_text, notes.entries, given, recalled or {}, caps.source
        )
    if "stale" in kinds:
        found += stale_findings(notes.entries, notes.dated)
    if "duplicates" in kinds or "conflicts" in kinds:
        found += [f for f in pair_findings(notes.entries) if f["kind"] in kinds]
    if "unfindable" in kinds:
        more, asked = unfindable_findings(notes.entries, notes.files, search)
        found += more
    if "secrets" in kinds:
        found += secret_findings(notes.files)
    for f in found:  # what the report shows never shows a secret it recognises
        for key in ("snippet", "message", "suggestion", "query"):
            if key in f:
                f[key] = redact(f[key])
    found.sort(key=lambda f: ORDER.index(f["kind"]))  # stable: each kind's own order
    counts = {k: 0 for k in ORDER if k in kinds}
    for f in found:
        counts[f["kind"]] += 1
    return {
        "counts": counts,
        "findings": found,
        "checked": {
            "files": len(notes.files),
            "entries": len(notes.entries),
            "datedLines": len(notes.dated),
            "asked": asked,
            "unread": len(notes.unread),
        },
        "caps": {
            "MEMORY.md": given.get("MEMORY.md", caps.of("MEMORY.md")),
            "USER.md": given.get("USER.md", caps.of("USER.md")),
            "total": total,
        },
    }
