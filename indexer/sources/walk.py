"""Walking a memory root: the regular files below it, through directory descriptors
only (``safefs``'s rules: no symlink followed, names checked), with what was passed
over and why told to a ``Skip``."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterator, Sequence

from indexer.errors import FileUnreadable, FileVanished, file_kind
from indexer.sources.patterns import Wanted
from indexer.sources.safefs import (
    DIR_FLAGS,
    MAX_DEPTH,
    Entry,
    change_stamp,
    open_dir,
    step_dir,
    valid_utf8,
)

__all__ = ["UNLISTED", "Skip", "walk"]

Skip = Callable[[tuple[str, ...], str], None]  # (components, reason)
# How a skip's reason starts for a folder that is there but cannot be listed.
UNLISTED = "cannot list this folder"


def _named(
    fd: int, base: tuple[str, ...], names: frozenset[str], skip: Skip | None
) -> Iterator[Entry]:
    """The regular files of ``names`` in the directory ``fd``, in name order, by the
    names the directory lists (their case on a case-insensitive disk); ``skip``
    hears of a name that is something else (a symlink, a folder, a FIFO...)."""
    try:
        present = set(os.listdir(fd))
    except OSError:
        return
    for name in sorted(names & present):
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            yield Entry((*base, name), st, change_stamp(st))
        elif skip is not None:
            skip((*base, name), file_kind(st.st_mode))


def walk(
    root: str | os.PathLike[str],
    start: Sequence[str],
    wanted: Wanted,
    *,
    skip: Skip | None = None,
    max_depth: int = MAX_DEPTH,
) -> Iterator[Entry]:
    """Regular files below ``root/start…`` in name order, through descriptors only.

    ``wanted.keeps(name, rel, is_dir)`` says which directories are entered and which
    files kept (``rel``: the path below ``root/start`` with ``/``). Symlinks are
    never followed, not even one swapped in mid-walk. ``skip`` hears of what was
    passed over for a reason a user should see: names that are not UTF-8, trees
    deeper than ``max_depth``, a folder that is there but cannot be listed (its
    reason starts with ``UNLISTED``: what was found under it before is not gone),
    and a symlink, FIFO, device or socket under a name ``wanted`` keeps."""

    def unlisted(parts: tuple[str, ...], exc: BaseException) -> None:
        if skip is not None:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            skip(parts, f"{UNLISTED}: {why}")

    try:
        top = open_dir(root)
    except FileVanished:
        return
    except (FileUnreadable, OSError) as exc:
        unlisted((), exc)
        return
    fds = [top]
    stack: list[tuple[int, Iterator[os.DirEntry[str]], tuple[str, ...]]] = []
    try:
        for n, part in enumerate(start):
            try:
                fds.append(step_dir(fds[-1], part, exact=False))
            except FileVanished:
                return
            except (FileUnreadable, OSError) as exc:
                unlisted(tuple(start[: n + 1]), exc)
                return
        base = tuple(start)
        if wanted.names is not None:  # these names here only: looked up, not walked
            yield from _named(fds[-1], base, wanted.names, skip)
            return

        def enter(fd: int, rel: tuple[str, ...]) -> None:
            try:
                with os.scandir(fd) as it:
                    entries = sorted(it, key=lambda e: e.name)
            except OSError as exc:
                entries = []
                unlisted((*base, *rel), exc)
            stack.append((fd, iter(entries), rel))

        enter(fds[-1], ())
        while stack:
            fd, it, rel = stack[-1]
            entry = next(it, None)
            if entry is None:
                stack.pop()
                if fd != fds[-1]:
                    os.close(fd)
                continue
            parts = (*rel, entry.name)
            rel_text = "/".join(parts)
            try:  # the entry's type as the directory lists it: no stat of every name
                is_dir = entry.is_dir(follow_symlinks=False)
                is_file = not is_dir and entry.is_file(follow_symlinks=False)
            except OSError:
                continue
            if is_dir:
                if not wanted.keeps(entry.name, rel_text, True):
                    continue
                if not valid_utf8(entry.name):
                    if skip:
                        skip((*base, *parts), "directory name is not valid UTF-8")
                    continue
                if len(parts) > max_depth:
                    if skip:
                        skip((*base, *parts), f"deeper than {max_depth} directory levels")
                    continue
                try:
                    child = os.open(entry.name, DIR_FLAGS, dir_fd=fd)
                except OSError as exc:
                    if exc.errno not in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
                        unlisted((*base, *parts), exc)  # else gone, or now a symlink
                    continue
                enter(child, parts)
            elif not is_file:
                if skip and wanted.keeps(entry.name, rel_text, False):
                    try:  # a symlink, FIFO, device or socket under a memory file's name
                        kind_of = file_kind(entry.stat(follow_symlinks=False).st_mode)
                    except OSError:
                        continue
                    skip((*base, *parts), kind_of)
            elif wanted.keeps(entry.name, rel_text, False):
                if not valid_utf8(entry.name):
                    if skip:
                        skip((*base, *parts), "file name is not valid UTF-8")
                    continue
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue  # gone meanwhile
                if stat.S_ISREG(st.st_mode):  # not swapped for something else since
                    yield Entry((*base, *parts), st, change_stamp(st))
    finally:
        for fd, _, _ in stack:
            if fd not in fds:
                os.close(fd)
        for fd in fds:
            os.close(fd)
