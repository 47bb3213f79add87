"""Index generations: rebuild into a new file, swap it in atomically.

The index path (``<agent>.sqlite``) is a symlink to a generation file
(``<agent>.g<N>.sqlite``). A rebuild writes a new generation while the current one
keeps answering, then replaces the symlink with one rename. Each generation has its
own ``-wal``/``-shm`` (SQLite names them after the resolved file), so a process still
holding the old generation never mixes its WAL with the new file. An index made
before generations existed (a plain file) is generation zero. Old generations are
removed once they are older than a grace period.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

__all__ = ["cleanup", "current_file", "new_generation", "publish"]

_GRACE_S = 600.0


def current_file(index_path: Path) -> Path:
    """The file the index path resolves to now."""
    return Path(os.path.realpath(index_path))


def new_generation(index_path: Path) -> Path:
    stem = index_path.name.removesuffix(".sqlite")
    return index_path.with_name(f"{stem}.g{time.time_ns()}.sqlite")


def publish(index_path: Path, generation: Path) -> None:
    """Point the index path at ``generation`` with one atomic rename."""
    tmp = index_path.with_name(f".{index_path.name}.swap-{os.getpid()}")
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    os.symlink(generation.name, tmp)
    os.replace(tmp, index_path)
    with contextlib.suppress(OSError):  # make the rename durable
        fd = os.open(index_path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def cleanup(index_path: Path, *, grace_s: float = _GRACE_S) -> list[Path]:
    """Remove generations (and their WAL files) that are not current and older than
    the grace period, and the WAL files of a replaced generation-zero file."""
    current = current_file(index_path)
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
