"""Which files belong to the memory source, and which paths memory_get may read.

memory source: ``MEMORY.md``, ``memory.md``, ``USER.md`` (OpenClaw's user model,
indexed by memory-core since 2026.9) and ``memory/**/*.md`` under the workspace,
plus ``extraPaths`` (files, directories walked recursively, or
directory + glob). Only ``.md``; symlinks below a root are never followed; ignored
directory names are pruned before they are entered. Walking and reading go through
``safefs`` (descriptors, never a path re-opened by name), so a directory swapped for
a symlink mid-walk is not followed; names that are not UTF-8 and trees deeper than
``safefs.MAX_DEPTH`` are passed over with a reason (``on_skip``).

Display paths (what results and memory_get use) are workspace-relative for files in
the workspace and ``extra/<name>/<rel>`` for extra roots outside it.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from indexer.config import Config, ExtraPath
from indexer.errors import FileUnreadable, FileVanished, PathRefused, WorkspaceError
from indexer.sources import safefs
from indexer.sources.patterns import Wanted, glob_match, is_ignored
from indexer.sources.safefs import Skip, walk

# The workspace's root memory files; everything else of the memory source is under
# ``memory/``. (The watcher watches the same names.)
ROOT_FILES = ("MEMORY.md", "memory.md", "USER.md")
MEMORY_DIR = "memory"

__all__ = [
    "MAX_PATH_BYTES",
    "MEMORY_DIR",
    "ROOT_FILES",
    "GetTarget",
    "Root",
    "SourceFile",
    "discover",
    "resolve_get_path",
    "roots_for",
]

MEMORY_SOURCE = "memory"
# A longer display path is passed over with a reason: PostgreSQL cannot index a
# value over ~2.7 kB (a btree's limit), and no real note's path comes near it.
MAX_PATH_BYTES = 1024
_SHOWN_BYTES = 1024  # a skip's path past this is shortened (it is a key in the store too)


def shown(path: str) -> str:
    """``path`` as a skip is recorded: printable, and past _SHOWN_BYTES its first
    400 and last 200 bytes around an ellipsis (storable; the file name stays)."""
    raw = safefs.path_bytes(path)
    if len(raw) <= _SHOWN_BYTES:
        return safefs.printable(path)
    head = raw[:400].decode("utf-8", "surrogateescape")  # a character cut in two
    tail = raw[-200:].decode("utf-8", "surrogateescape")  # shows as \xNN
    return safefs.printable(f"{head} … {tail}")


@dataclass(frozen=True, slots=True)
class SourceFile:
    """A file discovery found: where, from which source, and its stamp."""

    path: str  # display path, POSIX separators
    source: str
    mtime_ns: int  # change_stamp() of the lstat taken at discovery
    size: int
    root: str  # the root directory it was found under
    parts: tuple[str, ...]  # components below the root

    @property
    def abs(self) -> str:
        """The absolute path on disk, for messages (reads go through root + parts)."""
        return os.path.join(self.root, *self.parts)

    def open(self, *, links: bool = False) -> int:
        """A descriptor of this file, opened under its root (see ``safefs``)."""
        return safefs.open_under(self.root, self.parts, links=links)


OnSkip = Callable[[str, str], None]  # (display path, reason)


@dataclass(frozen=True)
class Root:
    """A directory (or single file) whose Markdown belongs to the memory source."""

    real: Path  # resolved absolute path
    display: str  # display prefix ("" for the workspace itself)
    pattern: str | None  # glob relative to the root, None = every .md
    is_file: bool = False


def roots_for(cfg: Config, workspace: Path | None = None) -> list[Root]:
    """The workspace (``workspace``: already resolved) plus every extra path that
    exists, each with its display prefix: its path below the workspace, else
    ``extra/<name>``, two of one name told apart by ``-2``, ``-3``… in the order of
    their real paths (not of the config: reordering ``extraPaths`` renames nothing)."""
    ws = workspace or cfg.require_workspace().resolve()
    found = []
    for extra in cfg.extraPaths:
        real, is_file, _ = _resolve_extra(extra)
        if real is not None:  # missing or not Markdown: discover() reports it (skipped)
            found.append((extra, real, is_file))
    names: dict[Path, str] = {}
    used: set[str] = set()
    for real in sorted({r for _, r, _ in found if not (r == ws or ws in r.parents)}):
        name = real.name or "root"
        display = f"extra/{name}"
        n = 2
        while display in used:
            display = f"extra/{name}-{n}"
            n += 1
        used.add(display)
        names[real] = display
    roots = [Root(ws, "", None)]
    for extra, real, is_file in found:
        display = names.get(real) or real.relative_to(ws).as_posix()
        roots.append(Root(real, display, extra.pattern, is_file))
    return roots


def _join(prefix: str, rel: str) -> str:
    return f"{prefix}/{rel}" if prefix else rel


def discover(
    cfg: Config, workspace: Path | None = None, *, on_skip: OnSkip | None = None
) -> list[SourceFile]:
    """Every file of the memory source, de-duplicated by inode, sorted by path
    (``workspace``: the config's, already resolved). ``on_skip`` hears of files and
    directories passed over for a reason."""
    found: dict[str, SourceFile] = {}
    seen_real: set[tuple[int, int]] = set()
    links = cfg.limits.allowHardLinks

    def add(root: Path, e: safefs.Entry, display: str) -> None:
        why = safefs.refusal(e.st, display, links=links, max_path_bytes=MAX_PATH_BYTES)
        if why is not None:
            if on_skip is not None:
                on_skip(shown(display), why)
            return
        key = (e.st.st_dev, e.st.st_ino)
        if key in seen_real:
            return  # same file twice (case-insensitive FS, overlapping roots)
        seen_real.add(key)
        found[display] = SourceFile(
            display, MEMORY_SOURCE, e.stamp, e.st.st_size, str(root), e.parts
        )

    def skipper(prefix: str) -> Skip:
        def skip(parts: tuple[str, ...], reason: str) -> None:
            if on_skip is not None:
                on_skip(shown(_join(prefix, "/".join(parts))), reason)

        return skip

    ignore = tuple(cfg.ignore)
    roots = roots_for(cfg, workspace)
    ws = roots[0].real
    try:  # a workspace that cannot be listed is an error of the sync, not an empty one
        at_top = Wanted(names=frozenset(ROOT_FILES))
        top = list(walk(ws, (), at_top, skip=skipper(""), must_list=True))
    except (OSError, FileUnreadable, FileVanished) as exc:
        why = exc.strerror if isinstance(exc, OSError) else str(exc)
        raise WorkspaceError(f"cannot list the workspace {ws}: {why}") from exc
    for e in top:
        add(ws, e, e.parts[0])
    in_memory = Wanted(ignore=ignore, under=f"{MEMORY_DIR}/")
    for e in walk(ws, (MEMORY_DIR,), in_memory, skip=skipper("")):
        add(ws, e, "/".join(e.parts))
    if on_skip is not None:
        _unusable_extras(cfg, on_skip)
    for root in roots[1:]:
        if root.is_file:
            one = _file_entry(root.real.parent, root.real.name)
            if one is not None:
                add(root.real.parent, one, root.display)
            continue
        if not root.real.is_dir():
            continue  # reported by _unusable_extras
        wanted = Wanted(ignore=ignore, pattern=root.pattern or None)
        for e in walk(root.real, (), wanted, skip=skipper(root.display)):
            add(root.real, e, _join(root.display, "/".join(e.parts)))
    return sorted(found.values(), key=lambda f: f.path)


def _resolve_extra(extra: ExtraPath) -> tuple[Path | None, bool, str | None]:
    """An ``extraPaths`` entry: (its real path, whether it is a file, why it adds
    nothing). The real path is None when it does not exist or is a file that is
    not Markdown; a FIFO or device keeps its path (``memory_get`` refuses it by
    name) but adds nothing."""
    try:
        real = extra.path.resolve(strict=True)
    except (OSError, RuntimeError):
        return None, False, "extra path does not exist"
    if real.is_file():
        if real.suffix.lower() != ".md":
            return None, True, "extra path is not a folder or a .md file"
        return real, True, None
    if real.is_dir():
        return real, False, None
    return real, False, "extra path is not a folder or a regular file (a FIFO or device)"


def _unusable_extras(cfg: Config, on_skip: OnSkip) -> None:
    """Tell ``on_skip`` of each ``extraPaths`` entry that adds nothing: missing, not
    Markdown, or neither a folder nor a regular file (a FIFO, a device). A typo in
    the config would otherwise index nothing without a word."""
    for extra in cfg.extraPaths:
        why = _resolve_extra(extra)[2] or _hopeless(extra.pattern)
        if why is not None:
            on_skip(shown(str(extra.path)), why)


def _hopeless(pattern: str | None) -> str | None:
    """Why an extra path's glob can match no Markdown file below its folder, or None:
    it leaves the folder (``..``, or absolute), or its last part ends in letters no
    ``.md`` name ends in ("*.txt", a plain "notes"; an unbalanced ``[`` is a plain
    character)."""
    if not pattern:
        return None
    parts = pattern.split("/")
    if pattern.startswith("/") or ".." in parts:
        return f"pattern {pattern!r} leaves the folder: it matches nothing below it"
    last = parts[-1]
    cut = max(last.rfind("*"), last.rfind("?"))
    if "[" in last and "]" in last[last.index("[") :]:
        cut = max(cut, last.rindex("]"))
    tail = last[cut + 1 :].lower()  # what every matching name ends in
    if tail and not (".md".endswith(tail) or tail.endswith(".md")):
        return f"pattern {pattern!r} can match no .md file"
    return None


def _in_memory_source(rel: str) -> bool:
    return rel in ROOT_FILES or (rel.startswith(MEMORY_DIR + "/") and rel.lower().endswith(".md"))


@dataclass(frozen=True, slots=True)
class GetTarget:
    """What ``memory_get`` may read: the display path and where it lives."""

    display: str
    root: Path  # open the file with safefs.open_under(root, parts)
    parts: tuple[str, ...]


def resolve_get_path(cfg: Config, raw: str) -> GetTarget:
    """Map a memory_get ``path`` to its root and components below it, or refuse.

    Accepted: a display path (or an absolute path inside a root) of a ``.md`` file
    that discovery would index. Refused with PathRefused: NUL bytes, backslashes,
    ``..`` or ``.`` components, other extensions, paths outside the roots, ignored
    directories. Nothing is opened here: the caller opens ``parts`` under ``root``
    with ``safefs.open_under(..., exact=True)``, which refuses a symlink anywhere on
    the way (even one swapped in after this check), FIFOs and devices."""
    if not isinstance(raw, str) or not raw.strip():
        raise PathRefused("memory_get needs a 'path': a file of the memory source, e.g. MEMORY.md")
    if "\x00" in raw or "\\" in raw:
        raise PathRefused(f"refused path {raw!r}: contains a NUL byte or a backslash")
    if not safefs.valid_utf8(raw):
        raise PathRefused(f"refused path {safefs.printable(raw)!r}: not valid Unicode")
    roots = roots_for(cfg)
    display = _display_for_absolute(roots, raw) if os.path.isabs(raw) else raw
    if any(p in ("..", ".") for p in PurePosixPath(raw).parts) or display.startswith("/"):
        raise PathRefused(f"refused path {raw!r}: '..' and '.' components are not allowed")
    if not display.lower().endswith(".md"):
        raise PathRefused(f"refused path {raw!r}: only .md files of the memory source are readable")
    # Pick the root with the longest display prefix that contains the path.
    target: Root | None = None
    rel = ""
    for root in roots[1:]:
        if root.is_file and display == root.display:
            target, rel = root, ""
            break
        prefix = root.display + "/"
        longer = target is None or len(root.display) > len(target.display)
        if not root.is_file and display.startswith(prefix) and longer:
            target, rel = root, display[len(prefix) :]
    if target is None:
        if not _in_memory_source(display):
            raise PathRefused(
                f"refused path {raw!r}: not a memory file (MEMORY.md, memory.md, USER.md, "
                "memory/**/*.md or an extra path)"
            )
        target, rel = roots[0], display
    elif target.pattern and not glob_match(rel, target.pattern):
        raise PathRefused(f"refused path {raw!r}: does not match the extra path's pattern")
    if target.is_file:
        return GetTarget(display, target.real.parent, (target.real.name,))
    rel_parts = tuple(p for p in rel.split("/") if p)
    if len(rel_parts) > safefs.MAX_DEPTH + 2:
        raise PathRefused(f"refused path {raw!r}: deeper than indexing goes")
    for i, part in enumerate(rel_parts[:-1]):
        if is_ignored(part, "/".join(rel_parts[: i + 1]), cfg.ignore):
            raise PathRefused(f"refused path {raw!r}: inside an ignored directory")
    return GetTarget(display, target.real, rel_parts)


def _display_for_absolute(roots: list[Root], raw: str) -> str:
    norm = os.path.normpath(raw)
    if norm != raw.rstrip("/") and ".." in PurePosixPath(raw).parts:
        raise PathRefused(f"refused path {raw!r}: '..' and '.' components are not allowed")
    p = Path(norm)
    best: tuple[int, str] | None = None
    for root in roots:
        if root.is_file:
            if p == root.real:
                return root.display
            continue
        if p == root.real or root.real in p.parents:
            rel = p.relative_to(root.real).as_posix()
            cand = _join(root.display, rel)
            depth = len(root.real.parts)
            if best is None or depth > best[0]:
                best = (depth, cand)
    if best is None:
        raise PathRefused(f"refused path {raw!r}: outside the workspace and extra paths")
    return best[1]


def _file_entry(directory: str | os.PathLike[str], name: str) -> safefs.Entry | None:
    """The file ``name`` in ``directory`` as ``walk`` would yield it (not followed if
    a symlink), or None when it is not there or not a regular file."""
    try:
        st = os.lstat(os.path.join(directory, name))
    except OSError:
        return None
    return safefs.Entry((name,), st, safefs.change_stamp(st)) if stat.S_ISREG(st.st_mode) else None
