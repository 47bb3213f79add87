"""The README's and the docs' commands must stay true: scripts exist, every memindex
line parses, the quick start prints what it shows, and every link resolves."""

from __future__ import annotations

import shlex
from pathlib import Path

from conftest import Runner

from indexer.surfaces.cli.parts import parser as _parser

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")
PAGES = [REPO / "README.md", REPO / "CONTRIBUTING.md", *sorted((REPO / "docs").glob("*.md"))]


def code_lines(text: str = README) -> list[str]:
    """Lines of a page's shell blocks (fences with no language or ``bash``)."""
    out: list[str] = []
    lang: str | None = None  # None: outside a fence
    for line in text.splitlines():
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


def test_every_memindex_command_in_the_readme_and_docs_parses() -> None:
    assert "memindex serve          # foreground; logs to stderr" in code_lines()
    seen = 0
    for page in PAGES:
        lines = [
            ln for ln in code_lines(page.read_text(encoding="utf-8")) if ln.startswith("memindex ")
        ]
        runnable = [ln for ln in lines if not any(c in ln for c in "[|…<") and "..." not in ln]
        for line in runnable:
            try:
                _parser().parse_args(shlex.split(line, comments=True)[1:])
            except SystemExit:
                raise AssertionError(f"{page.name}: {line}") from None
        seen += len(runnable) if page.name == "README.md" else 0
    assert seen >= 6


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to dashes."""
    import re

    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def test_every_link_between_the_pages_resolves() -> None:
    """A relative link in README.md, CONTRIBUTING.md or docs/ names a file that exists
    and, with ``#anchor``, a heading of it (pages were split out of the README)."""
    import re

    bad = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            if not dest.exists():
                bad.append(f"{page.name}: {target}")
                continue
            if anchor and dest.suffix == ".md":
                heads = re.findall(r"^#+ (.+)$", dest.read_text(encoding="utf-8"), re.M)
                if anchor not in {_anchor(h) for h in heads}:
                    bad.append(f"{page.name}: {target} (no such heading)")
    assert bad == []


def test_the_readme_is_short() -> None:
    assert len(README.splitlines()) <= 300


def test_the_quick_start_prints_what_the_readme_shows(tmp_path: Path) -> None:
    """The sample output under "First index, first search" is what the command prints
    on the example workspace (the README drifted from it before)."""
    import os
    import subprocess
    import sys

    block = README.split("```text\n", 1)[1].split("```", 1)[0]
    cmd = 'search "which machine is the gateway" --max-results 1'
    assert f"memindex --workspace\nexamples/workspace {cmd}` prints" in README
    env = {**os.environ, "HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path / "state")}
    base = [sys.executable, "-m", "indexer.surfaces.cli", "--workspace", "examples/workspace"]
    subprocess.run([*base, "index"], cwd=REPO, env=env, check=True, capture_output=True)
    got = subprocess.run(
        [*base, *shlex.split(cmd)], cwd=REPO, env=env, check=True, capture_output=True, text=True
    ).stdout
    assert got.rstrip("\n") == block.rstrip("\n")


def test_the_openclaw_feature_table_is_the_plugins() -> None:
    """docs/OPENCLAW.md's "What the agent keeps" is features.json (what `openclaw memindex
    status` and `memindex doctor` print), and every test it names exists."""
    import re

    from indexer.surfaces.openclaw.features import feature_table, markdown_table

    assert markdown_table() in (REPO / "docs" / "OPENCLAW.md").read_text(encoding="utf-8")
    for f in feature_table():
        for ref in filter(None, (t.strip() for t in f.get("test", "").split(","))):
            file, _, name = ref.partition("::")
            text = (REPO / file).read_text(encoding="utf-8")
            assert not name or re.search(rf"^def {re.escape(name)}\(", text, re.M), ref
        assert f.get("test") or f["servedBy"] == "nobody", f["id"]


def test_the_quick_start_commands_run(cli: Runner) -> None:
    """Every README command on the example workspace runs and exits 0, in order (a
    fresh home: nothing indexed before the first)."""
    import os

    lines = [ln for ln in code_lines() if ln.startswith("memindex --workspace examples/")]
    assert len(lines) >= 4
    here = os.getcwd()
    os.chdir(REPO)  # the README's paths are the repository's
    try:
        for line in lines:
            code, out, err = cli(*shlex.split(line, comments=True)[1:])
            assert code == 0, f"{line}: {err}"
            assert out.strip(), line
    finally:
        os.chdir(here)
