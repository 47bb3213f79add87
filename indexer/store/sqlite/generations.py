"""Index generations: rebuild into a new file, swap it in atomically.

The index path (``<agent>.sqlite``) is a symlink to a generation file
(``<agent>.g<N>.sqlite``). A rebuild writes a new generation while the current one
keeps answering, then replaces the symlink with one rename. Each generation has its
own ``-wal``/``-shm`` (SQLite names them after the resolved file), so a process still
holding the old generation never mixes its WAL with the new file. An index made
before generations existed (a plain file) is generation zero. Old generations are
removed once they are older than a grace period.

A rebuild killed before it published leaves an *abandoned* generation: newer than
the current one and never pointed at, so no reader has it open. The next rebuild
(holding ``.<agent>.rebuild.lock``, so only one runs per index) copies its
embedding cache and batch jobs into the current generation (vectors paid for are
not paid again) and deletes it before it makes its own generation, so a kill at any
point leaves at most one abandoned generation.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path

from indexer.errors import IndexCorrupt, StoreError

__all__ = [
    "ForeignLink",
    "abandoned",
    "cleanup",
    "current_file",
    "new_generation",
    "publish",
    "rebuild_lock",
    "remove_generation",
    "set_aside",
]

_GEN = re.compile(r"\.g(\d+)\.sqlite$")

_GRACE_S = 600.0


class ForeignLink(IndexCorrupt):
    """The index path is a symlink memindex did not make: to anything but one of its
    generations beside it. Nothing behind it is opened, moved or changed."""


def current_file(index_path: Path) -> Path:
    """The file the index path stands for now: itself (generation zero), or the
    generation beside it that its symlink names (in the path's real folder).
    ForeignLink for a symlink to anything else: memindex never follows a link out of
    its own files (one to ``/dev/zero`` was once set aside as a damaged index, and a
    user's file behind another had its mode changed)."""
    folder = Path(os.path.realpath(index_path.parent))
    if not index_path.is_symlink():
        return folder / index_path.name
    target = os.readlink(index_path)
    stem = index_path.name.removesuffix(".sqlite")
    if "/" in target or not re.fullmatch(re.escape(stem) + r"\.g\d+\.sqlite", target):
        raise ForeignLink(
            f"index {index_path} is a link to {target!r}, not to one of its generations "
            "(memindex does not follow it)"
        )
    return folder / target


def new_generation(index_path: Path) -> Path:
    stem = index_path.name.removesuffix(".sqlite")
    return index_path.with_name(f"{stem}.g{time.time_ns()}.sqlite")


def _ns(path: Path) -> int:
    m = _GEN.search(path.name)
    return int(m.group(1)) if m else 0


def abandoned(index_path: Path) -> list[Path]:
    """Generations newer than the current one: rebuilds that never published."""
    try:
        current = current_file(index_path)
    except ForeignLink:
        return []
    stem = index_path.name.removesuffix(".sqlite")
    floor = _ns(current)
    return sorted(
        g
        for g in index_path.parent.glob(f"{stem}.g*.sqlite")
        if g.resolve() != current and _ns(g) > floor
    )


def remove_generation(gen: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(OSError):
            os.unlink(f"{gen}{suffix}")


def set_aside(index_path: Path) -> Path:
    """Move the current file (and its -wal/-shm/-journal) to ``<file>.damaged-<UTC
    time>`` and remove the index path's symlink, so the path opens as a new, empty
    index. Returns where the file went (kept for the user; never removed by
    ``cleanup``, whose names end in ``.sqlite``)."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    try:
        current = current_file(index_path)
    except ForeignLink:  # the link itself is kept aside; what it points at is not touched
        kept = index_path.with_name(f"{index_path.name}.damaged-{stamp}")
        os.replace(index_path, kept)
        return kept
    kept = current.with_name(f"{current.name}.damaged-{stamp}")
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            os.replace(f"{current}{suffix}", f"{kept}{suffix}")
    if index_path.is_symlink():
        with contextlib.suppress(FileNotFoundError):
            index_path.unlink()
    return kept


@contextlib.contextmanager
def rebuild_lock(index_path: Path) -> Iterator[None]:
    """Hold the one-rebuild-at-a-time lock of an index, or raise StoreError."""
    lock = index_path.with_name(f".{index_path.name.removesuffix('.sqlite')}.rebuild.lock")
    fd = os.open(lock, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            raise StoreError(
                f"another memindex process is rebuilding {index_path}: try again when it is done"
            ) from exc
        yield
    finally:
        os.close(fd)


def publish(index_path: Path, generation: Path) -> None:
    """Point the index path at ``generation`` with one atomic rename. A plain file
    there (generation zero) is replaced; its ``-wal``/``-shm`` go with it: nobody
    opens them by name again (SQLite names them after the resolved file), and a
    reader that still has them open keeps its descriptors."""
    tmp = index_path.with_name(f".{index_path.name}.swap-{os.getpid()}")
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    zero = index_path.is_file() and not index_path.is_symlink()
    os.symlink(generation.name, tmp)
    os.replace(tmp, index_path)
    if zero:
        for suffix in ("-wal", "-shm", "-journal"):
            with contextlib.suppress(OSError):
                os.unlink(f"{index_path}{suffix}")
    with contextlib.suppress(OSError):  # make the rename durable
        fd = os.open(index_path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def cleanup(index_path: Path, *, grace_s: float = _GRACE_S) -> list[Path]:
    """Remove generations (and their WAL files) that are not current and older than
    the grace period, and the WAL files of a replaced generation-zero file."""
    try:
        current = current_file(index_path)
    except ForeignLink:
        return []
    stem = index_path.name.removesuffix(".sqlite")
    removed: list[Path] = []
    now = time.time()
    candidates = list(index_path.parent.glob(f"{stem}.g*.sqlite"))
    if index_path.is_symlink():
        candidates.append(index_path)  # its own -wal/-shm belong to generation zero
    for gen in candidates:
        if gen != index_path and gen.resolve() == current:
            continue
        for f in (gen, Path(f"{gen}-wal"), Path(f"{gen}-shm"), Path(f"{gen}-journal")):
            if f == index_path:
                continue
            try:
                if now - f.stat().st_mtime < grace_s:
                    continue
                f.unlink()
                removed.append(f)
            except FileNotFoundError:
                continue
    return removed
