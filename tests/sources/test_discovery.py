from __future__ import annotations

import os
from pathlib import Path

from conftest import write

from indexer.config import Config, ExtraPath
from indexer.sources.discovery import discover


def test_memory_source_rules(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write(ws, "MEMORY.md", "a")
    write(ws, "USER.md", "the user model (OpenClaw 2026.9)")
    write(ws, "SOUL.md", "a bootstrap file, not memory")
    write(ws, "memory/2026-01-01.md", "b")
    write(ws, "memory/deep/nested/note.md", "c")
    write(ws, "memory/readme.txt", "not md")
    write(ws, "other/x.md", "not in memory/")
    write(ws, "README.md", "not a memory file")
    for ignored in (".git", "node_modules", ".venv", "venv", ".tox", "__pycache__"):
        write(ws, f"memory/{ignored}/x.md", "ignored")
    write(ws, "memory/drafts/skip.md", "by config")
    outside = write(tmp_path, "elsewhere/secret.md", "outside")
    os.symlink(outside, ws / "memory/link.md")
    os.symlink(tmp_path / "elsewhere", ws / "memory/linked-dir")
    cfg = Config(workspace=ws, ignore=("drafts",))
    got = [f.path for f in discover(cfg)]
    assert got == ["MEMORY.md", "USER.md", "memory/2026-01-01.md", "memory/deep/nested/note.md"]


def test_extra_paths(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write(ws, "memory.md", "lower-case memory file")
    write(ws, "docs/a.md", "inside workspace")
    notes = tmp_path / "notes"
    write(notes, "one.md", "1")
    write(notes, "sub/two.md", "2")
    write(notes, "sub/skip.txt", "x")
    single = write(tmp_path, "single/file.md", "f")
    proj = tmp_path / "proj"
    write(proj, "keep/k.md", "k")
    write(proj, "drop/d.md", "d")
    cfg = Config(
        workspace=ws,
        extraPaths=(
            ExtraPath(ws / "docs"),
            ExtraPath(notes),
            ExtraPath(single),
            ExtraPath(proj, "keep/*.md"),
            ExtraPath(tmp_path / "missing"),
        ),
    )
    got = [f.path for f in discover(cfg)]
    assert got == [
        "docs/a.md",
        "extra/file.md",
        "extra/notes/one.md",
        "extra/notes/sub/two.md",
        "extra/proj/keep/k.md",
        "memory.md",
    ]


def test_two_extra_folders_of_one_name_keep_their_names_in_any_order(tmp_path: Path) -> None:
    """`extra/notes` and `extra/notes-2` went by the order of `extraPaths`: reordered,
    each name meant the other folder (citations kept pointed at the wrong file)."""
    a, b = tmp_path / "a" / "notes", tmp_path / "b" / "notes"
    write(a, "x.md", "in a")
    write(b, "y.md", "in b")
    ws = tmp_path / "ws"
    ws.mkdir()
    for order in ((a, b), (b, a)):
        cfg = Config(workspace=ws, extraPaths=tuple(ExtraPath(p) for p in order))
        assert [f.path for f in discover(cfg)] == ["extra/notes-2/y.md", "extra/notes/x.md"]


def test_double_star_matches_zero_directories(tmp_path: Path) -> None:
    from indexer.sources.patterns import glob_match

    assert glob_match("a.md", "**/*.md") and glob_match("x/y/a.md", "**/*.md")
    assert glob_match("keep/k.md", "keep/**/*.md") and not glob_match("a.txt", "**/*.md")
    ws = tmp_path / "ws"
    ws.mkdir()
    notes = tmp_path / "notes"
    write(notes, "top.md", "t")
    write(notes, "deep/er.md", "d")
    cfg = Config(workspace=ws, extraPaths=(ExtraPath(notes, "**/*.md"),))
    assert [f.path for f in discover(cfg)] == ["extra/notes/deep/er.md", "extra/notes/top.md"]


def test_what_a_walk_keeps_is_data(tmp_path: Path) -> None:
    """``Wanted``: the memory folder's ignore globs see the path below the workspace,
    an extra root's pattern the path below the root, and a names-only walk (the
    workspace's root files) keeps those names and enters no directory."""
    from indexer.sources.patterns import Wanted
    from indexer.sources.safefs import walk

    memory = Wanted(ignore=("memory/private/**", "*.tmp.md"), under="memory/")
    assert memory.keeps("a.md", "a.md", False) and memory.keeps("B.MD", "x/B.MD", False)
    assert not memory.keeps("a.txt", "a.txt", False)
    assert not memory.keeps("s.md", "private/s.md", False)  # by path, under memory/
    assert not memory.keeps("x.tmp.md", "deep/x.tmp.md", False)  # by name
    assert memory.keeps("deep", "deep", True) and not memory.keeps("node_modules", "n", True)
    extra = Wanted(pattern="keep/**/*.md")
    assert extra.keeps("k.md", "keep/k.md", False) and not extra.keeps("o.md", "o.md", False)
    write(tmp_path, "MEMORY.md", "kept")
    write(tmp_path, "x.md", "not one of the names")
    write(tmp_path, "memory/MEMORY.md", "in a directory: not entered")
    roots = Wanted(names=frozenset({"MEMORY.md"}))
    assert [e.parts for e in walk(tmp_path, (), roots)] == [("MEMORY.md",)]


def test_the_root_files_are_regular_files_only(tmp_path: Path) -> None:
    """MEMORY.md, memory.md and USER.md are looked up by name, not found by walking
    the workspace's top folder (which may hold thousands of other names): a symlink,
    a folder or a FIFO under one of those names is passed over, never followed or
    opened."""
    ws = tmp_path / "ws"
    write(ws, "memory/2026-01-01.md", "a log")
    outside = write(tmp_path, "elsewhere/secret.md", "outside")
    os.symlink(outside, ws / "MEMORY.md")
    (ws / "USER.md").mkdir()
    os.mkfifo(ws / "memory.md")
    for i in range(50):
        write(ws, f"other-{i}.md", "not a memory file")
    assert [f.path for f in discover(Config(workspace=ws))] == ["memory/2026-01-01.md"]
    os.unlink(ws / "MEMORY.md")
    write(ws, "MEMORY.md", "the curated core")
    assert [f.path for f in discover(Config(workspace=ws))] == ["MEMORY.md", "memory/2026-01-01.md"]
