from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import write

from indexer.config import Config, ExtraPath
from indexer.engine import AgentIndex
from indexer.errors import InvalidParams, NotFound, PathRefused


@pytest.fixture
def idx(cfg: Config, workspace: Path, tmp_path: Path) -> AgentIndex:
    write(workspace, "notes/secret.md", "not a memory file\n")
    write(workspace, "memory/script.py", "print('x')\n")
    write(workspace, ".env", "KEY=1\n")
    outside = write(tmp_path, "outside/elsewhere.md", "outside\n")
    os.symlink(outside, workspace / "memory/link.md")
    os.symlink(tmp_path / "outside", workspace / "memory/linkdir")
    write(workspace, "memory/node_modules/pkg.md", "ignored\n")
    extra = tmp_path / "extra-notes"
    write(extra, "ideas.md", "line one\nline two\nline three\n")
    c = replace(cfg, extraPaths=(ExtraPath(extra),))
    return AgentIndex(c)


def test_reads_lines(idx: AgentIndex) -> None:
    r = idx.get("MEMORY.md")
    assert r["from"] == 1 and r["totalLines"] == 5 and r["lines"] == 5
    r = idx.get("MEMORY.md", start=4, lines=1)
    assert r["text"] == "- Dana likes rye bread." and r["lines"] == 1
    r = idx.get("extra/extra-notes/ideas.md", start=2)
    assert r["text"] == "line two\nline three"
    assert idx.get("MEMORY.md", start=99)["text"] == ""
    abs_path = str(idx.cfg.workspace / "memory/2026-11-01.md")  # type: ignore[operator]
    assert idx.get(abs_path)["path"] == "memory/2026-11-01.md"


def test_user_md_is_read_and_found_like_memory_md(idx: AgentIndex, workspace: Path) -> None:
    """OpenClaw 2026.9's user model: memory-core indexes an existing root USER.md."""
    write(workspace, "USER.md", "# User\n\n- Always answer in metric units.\n")
    idx.sync()
    assert idx.get("USER.md", start=3)["text"] == "- Always answer in metric units."
    hits = idx.search("metric units")["results"]
    assert hits and hits[0]["path"] == "USER.md"
    with pytest.raises(PathRefused):
        idx.get("user.md")  # case matters, as for MEMORY.md


@pytest.mark.parametrize(
    "path",
    [
        "../outside/elsewhere.md",
        "memory/../MEMORY.md",
        "memory/../../outside/elsewhere.md",
        "./MEMORY.md",
        "/etc/passwd",
        "/etc/hosts.md",
        "notes/secret.md",
        "memory/script.py",
        ".env",
        "memory/link.md",
        "memory/linkdir/elsewhere.md",
        "memory/node_modules/pkg.md",
        "MEMORY.md\x00.md",
        "memory\\2026-11-01.md",
        "%2e%2e/outside/elsewhere.md",
        "",
    ],
)
def test_refused(idx: AgentIndex, path: str) -> None:
    with pytest.raises((PathRefused, NotFound)) as info:
        idx.get(path)
    assert info.value.message


def test_case_tricks_refused(idx: AgentIndex) -> None:
    for p in ("memory.MD", "Memory.md", "MEMORY.MD", "Memory/2026-11-01.md"):
        with pytest.raises((PathRefused, NotFound)):
            idx.get(p)


def test_missing_and_bad_params(idx: AgentIndex) -> None:
    with pytest.raises(NotFound):
        idx.get("memory/2099-01-01.md")
    with pytest.raises(InvalidParams):
        idx.get("MEMORY.md", start=0)
    with pytest.raises(InvalidParams):
        idx.get("MEMORY.md", lines="3")


def test_utf16_files_with_a_byte_order_mark_are_read(idx: AgentIndex, workspace: Path) -> None:
    """Windows editors save "Unicode" text as UTF-16 with a byte-order mark (Notepad:
    little-endian, CRLF). It is indexed and cited like UTF-8, and memory_get returns
    the same lines; UTF-16 that does not decode is skipped with the reason."""
    text = "# Garden\r\n\r\n- The quince tree was planted in March.\r\n- Café au lait.\r\n"
    write(workspace, "memory/notepad.md", b"\xff\xfe" + text.encode("utf-16-le"))
    write(workspace, "memory/big-endian.md", b"\xfe\xff" + "- Heron at dawn.\n".encode("utf-16-be"))
    write(workspace, "memory/broken.md", b"\xff\xfe" + "- ok".encode("utf-16-le") + b"\x00\xd8")
    rep = idx.sync().to_json()
    skipped = {s["path"]: s["reason"] for s in rep["skipped"]}
    assert "not valid UTF-16-LE" in skipped["memory/broken.md"]
    assert "memory/notepad.md" not in skipped and "memory/big-endian.md" not in skipped
    hit = idx.search("quince tree")["results"][0]
    assert hit["path"] == "memory/notepad.md"
    assert hit["snippet"] == text.replace("\r\n", "\n").strip()
    assert idx.get("memory/notepad.md", start=4, lines=1)["text"] == "- Café au lait."
    assert idx.search("heron dawn")["results"][0]["path"] == "memory/big-endian.md"
