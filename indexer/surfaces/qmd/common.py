"""What both halves of ``memindex-qmd`` share: where its files live, its search
commands, and how results are printed. Standard library only: ``entry`` (the
fast path through a warm daemon) imports it without the index code."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:  # memindex-qmd's fast path loads nothing it does not use
    from indexer.api import QmdResult

__all__ = ["MODES", "cache_dir", "config_dir", "emit", "qmd_socket"]

# QMD's search commands as memindex search modes: BM25 only, vectors only, fused.
MODES = {"search": "keyword", "vsearch": "vector", "query": "hybrid"}


def _xdg(var: str, default: str) -> Path:
    value = os.environ.get(var)
    return Path(value) if value else Path.home() / default


def config_dir() -> Path:
    return _xdg("XDG_CONFIG_HOME", ".config") / "memindex-qmd"


def cache_dir() -> Path:
    return _xdg("XDG_CACHE_HOME", ".cache")


def qmd_socket() -> Path:
    """The socket of the warm daemon that serves the collections."""
    return cache_dir() / "memindex-qmd" / "daemon.sock"


def emit(items: list[QmdResult], out: TextIO, as_json: bool) -> None:
    """Print search results as QMD does."""
    if as_json:
        out.write(json.dumps(items, ensure_ascii=False) + "\n")
    elif not items:
        out.write("No results found\n")
    else:
        for it in items:
            out.write(f"{it['file']} {it['score']:.2f} {it['docid']}\n{it['snippet']}\n\n")
