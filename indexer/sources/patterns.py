"""Which names a walk keeps: the ignore rules and globs of the memory source, as data
``safefs.walk`` applies (no callback into the code that asked for the walk)."""

from __future__ import annotations

import fnmatch
from collections.abc import Collection
from dataclasses import dataclass

from indexer.config import DEFAULT_IGNORE_DIRS

__all__ = ["Wanted", "glob_match", "is_ignored"]


def glob_match(rel: str, pattern: str) -> bool:
    """fnmatch, except that ``**/`` also matches no directory at all (so ``**/*.md``
    matches ``a.md`` as well as ``x/y/a.md``)."""
    if fnmatch.fnmatchcase(rel, pattern):
        return True
    while "**/" in pattern:
        pattern = pattern.replace("**/", "", 1)
        if fnmatch.fnmatchcase(rel, pattern):
            return True
    return False


def is_ignored(name: str, rel: str, ignore: Collection[str]) -> bool:
    """A name (at path ``rel``) the memory source leaves out: one of the default
    ignored directories, or matching an ``ignore`` glob by name or path."""
    if name in DEFAULT_IGNORE_DIRS:
        return True
    return any(fnmatch.fnmatchcase(name, g) or fnmatch.fnmatchcase(rel, g) for g in ignore)


@dataclass(frozen=True, slots=True)
class Wanted:
    """What a walk keeps. With ``names``: those files in the folder it starts in,
    looked up by name (``safefs.walk``), nothing else. Otherwise files ending in
    ``suffix`` (any case) and, with a ``pattern``, matching it, and the directories it
    enters; either left out when ``ignore``d (by name, or by path with ``under``
    before it: the walk's paths are relative to where it starts) (``keeps``)."""

    ignore: tuple[str, ...] = ()
    under: str = ""  # e.g. "memory/": what the ignore globs see before a walk's path
    suffix: str = ".md"
    pattern: str | None = None  # a glob of the path below the walk's start
    names: frozenset[str] | None = None  # only these file names (and no directory)

    def keeps(self, name: str, rel: str, is_dir: bool) -> bool:
        """Whether a walk without ``names`` keeps the entry ``name`` at ``rel``
        (enters it, a directory)."""
        if is_ignored(name, self.under + rel, self.ignore):
            return False
        if is_dir:
            return True
        if not name.lower().endswith(self.suffix):
            return False
        return self.pattern is None or glob_match(rel, self.pattern)
