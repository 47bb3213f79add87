"""The README's commands must stay true: scripts exist and every memindex line parses."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from indexer.cli import _parser

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text(encoding="utf-8")


def code_lines() -> list[str]:
    blocks = re.findall(r"```(?:bash)?\n(.*?)```", README, flags=re.S)
    return [ln.strip() for b in blocks for ln in b.splitlines() if ln.strip()]


def test_setup_commands_exist() -> None:
    for script in ("scripts/demo.sh", "scripts/test.sh"):
        assert f"bash {script}" in README
        assert (REPO / script).is_file()
    assert "bash scripts/test.sh" in (REPO / ".ci" / "run").read_text()


def test_every_memindex_command_in_the_readme_parses() -> None:
    lines = [ln for ln in code_lines() if ln.startswith("memindex ")]
    assert len(lines) >= 4
    for line in lines:
        if "[" in line or "|" in line or "…" in line or "..." in line:
            continue  # synopsis lines
        _parser().parse_args(shlex.split(line)[1:])
