"""``memindex audit``: the memory audit (``memory_audit``) as a short report —
counts first, then the findings by kind, the most important kind first, in colour
on a terminal — or, with ``--json``, the method's answer as it is."""

from __future__ import annotations

from indexer.api import AuditResponse
from indexer.surfaces.cli.parts import Call
from indexer.surfaces.reading import read_call

__all__ = ["run_audit"]

_TITLES = {
    "secrets": "Secrets in memory files",
    "stale": "Curated entries a later note changed",
    "conflicts": "Curated entries that contradict each other",
    "bootstrap": "Past OpenClaw's bootstrap cap (never in a session's context)",
    "duplicates": "Curated entries said twice",
    "unfindable": "Curated entries their own words do not find",
}
_COLOUR = {"secrets": "31", "stale": "33", "conflicts": "33", "bootstrap": "35"}


def run_audit(c: Call) -> int:
    params: dict[str, object] = {}
    if c.args.kind:
        params["kinds"] = list(dict.fromkeys(c.args.kind))
    result = read_call(c.config(), "memory_audit", params, direct=lambda: c.setup_logging())
    if c.args.json:
        return c.json(result)
    c.out.write(report(result, colour=c.out.isatty()))
    return 0


def report(result: AuditResponse, *, colour: bool = False) -> str:
    """The audit as a person reads it."""

    def paint(text: str, code: str) -> str:
        return f"\033[{code}m{text}\033[0m" if colour else text

    counts = result["counts"]
    checked = result["checked"]
    total = sum(counts.values())
    head = (
        f"memory audit: {total} finding{'s' * (total != 1)} in {checked['files']} files "
        f"({checked['entries']} curated entries, {checked['datedLines']} dated lines)"
    )
    lines = [paint(head, "1")]
    lines.append("  " + ", ".join(f"{k} {n}" for k, n in counts.items()))
    if checked.get("unread"):
        lines.append(
            f"  {checked['unread']} file(s) could not be read (memindex status names them)"
        )
    for kind, title in _TITLES.items():
        found = [f for f in result["findings"] if f["kind"] == kind]
        if not found:
            continue
        lines.append("")
        lines.append(paint(f"{title} ({len(found)})", _COLOUR.get(kind, "36")))
        for f in found:
            where = f"{f['path']}:{f['startLine']}"
            if f["endLine"] != f["startLine"]:
                where += f"-{f['endLine']}"
            lines.append(f"  {where}  {f['message']}")
            if f.get("snippet"):
                lines.append(f"      {f['snippet'][:100]}")
            lines.append(paint(f"      → {f['suggestion']}", "2"))
    if not total:
        lines.append("nothing to fix")
    return "\n".join(lines) + "\n"
