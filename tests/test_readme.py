"""The README's commands must stay true: scripts exist and every memindex line parses."""

from __future__ import annotations

import shlex
from pathlib import Path

from indexer.surfaces.cli_parts import parser as _parser

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text(encoding="utf-8")


def code_lines() -> list[str]:
    """Lines of the README's shell blocks (fences with no language or ``bash``)."""
    out: list[str] = []
    lang: str | None = None  # None: outside a fence
    for line in README.splitlines():
        if line.startswith("```"):
            lang = line[3:].strip() if lang is None else None
            continue
        if lang in ("", "bash") and line.strip():
            out.append(line.strip())
    return out


def test_setup_commands_exist() -> None:
    for script in ("scripts/demo.sh", "scripts/test.sh"):
        assert f"bash {script}" in README
        assert (REPO / script).is_file()
    assert "bash scripts/test.sh" in (REPO / ".ci" / "run").read_text()


def test_every_memindex_command_in_the_readme_parses() -> None:
    lines = [ln for ln in code_lines() if ln.startswith("memindex ")]
    runnable = [ln for ln in lines if not any(c in ln for c in "[|…") and "..." not in ln]
    assert len(runnable) >= 6
    assert "memindex serve          # foreground; logs to stderr" in lines
    for line in runnable:
        _parser().parse_args(shlex.split(line, comments=True)[1:])
