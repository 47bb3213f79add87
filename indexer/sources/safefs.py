"""The one way memindex opens a file under a root: never outside it, never blocking.

Every read of a workspace, extra-path or transcript file (discovery, sync, transcript
deltas, ``memory_get``, ``memindex-qmd get``) goes through ``open_under``: the root is
opened as a directory, then each component below it with ``openat(dir_fd, name,
O_DIRECTORY | O_NOFOLLOW)`` (a component swapped for a symlink fails with ELOOP, so
no path-string check is ever followed by an open by name); the leaf is looked at with
``fstatat`` (no open of a FIFO or a device at all), opened with ``O_NOFOLLOW |
O_NONBLOCK | O_NOCTTY`` and checked again with ``fstat`` (a regular file, the inode
the look saw); a hard link is refused unless the caller allows it
(``limits.allowHardLinks``: a link to a file outside the workspace would otherwise be
served as a memory); reads are bounded. Names are bytes on Linux: ``valid_utf8`` says
whether one can be stored and shown, ``printable`` gives the text to show otherwise.

Directory walks (``walk``: the regular files below a root, what was passed over and
why told to a ``Skip``) go through descriptors only, one per level, iteratively, and
stop at ``MAX_DEPTH`` levels. A pass over a workspace enters this module once (the
walk): each file's checks run inside it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from indexer.errors import FileUnreadable, FileVanished, file_kind
from indexer.sources.patterns import Wanted

__all__ = [
    "HARD_LINK",
    "DIR_FLAGS",
    "MAX_DEPTH",
    "Entry",
    "change_stamp",
    "open_dir",
    "open_under",
    "opened",
    "path_bytes",
    "printable",
    "HARD_LINK_REASON",
    "read_all",
    "Skip",
    "step_dir",
    "UNLISTED",
    "valid_utf8",
    "walk",
]

MAX_DEPTH = 64  # directory levels below a root that are walked
HARD_LINK_REASON = "a hard link"  # how every refusal of a hard link begins
HARD_LINK = (
    HARD_LINK_REASON + " (the file has {n} names; it may be a file from outside the "
    "workspace): not read, what was indexed of it kept; set limits.allowHardLinks = true "
    "to index hard-linked files"
)


def hard_link(st: os.stat_result, links: bool) -> str | None:
    """Why a regular file is refused as a hard link, or None."""
    if links or st.st_nlink <= 1:
        return None
    return HARD_LINK.format(n=st.st_nlink)


_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
DIR_FLAGS = os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC
_LEAF_FLAGS = (
    os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | _CLOEXEC
)


def valid_utf8(text: str) -> bool:
    """True if ``text`` encodes as UTF-8: a file name (as ``os`` returned it) that is
    valid UTF-8 on disk, or a string from JSON with no lone surrogate."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def printable(path: str) -> str:
    """``path`` with bytes that are not UTF-8 shown as ``\\xNN`` (storable, showable)."""
    return path_bytes(path).decode("utf-8", "backslashreplace")


def path_bytes(path: str) -> bytes:
    """``path`` as the bytes of a name: a name ``os`` returned as it is on disk, and
    a string from JSON holding a lone surrogate as its UTF-8-style bytes (no
    UnicodeEncodeError from a client's hostile path)."""
    try:
        return os.fsencode(path)
    except UnicodeEncodeError:
        return path.encode("utf-8", "surrogatepass")


def _check_part(part: str) -> None:
    if not part or part in (".", "..") or "/" in part or "\x00" in part:
        raise FileUnreadable(f"invalid path component {printable(part)!r}")


def _os_error(exc: OSError, what: str) -> Exception:
    if exc.errno in (errno.ENOENT, errno.ENOTDIR):
        return FileVanished(f"{what}: no such file")
    if exc.errno == errno.ELOOP:
        return FileUnreadable("a symlink on the way (symlinks are not followed)")
    return exc


def open_dir(root: str | os.PathLike[str]) -> int:
    """A descriptor of the root directory itself (configured by the user: followed)."""
    try:
        return os.open(root, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    except OSError as exc:
        raise _os_error(exc, os.fspath(root)) from exc


def step_dir(dfd: int, part: str, exact: bool) -> int:
    """Open the directory ``part`` below ``dfd`` without following a symlink."""
    _check_part(part)
    if exact and part not in os.listdir(dfd):  # no case-folding tricks
        raise FileVanished(f"{printable(part)}: no such directory")
    try:
        return os.open(part, DIR_FLAGS, dir_fd=dfd)
    except OSError as exc:
        raise _os_error(exc, printable(part)) from exc


def open_under(
    root: str | os.PathLike[str] | int,
    parts: Sequence[str],
    *,
    exact: bool = False,
    links: bool = False,
) -> int:
    """A read-only descriptor of the regular file ``root/parts…``, or an error.

    ``root`` is a path or an open directory descriptor (not closed here). Raises
    FileVanished (it is not there), FileUnreadable (a symlink on the way, a FIFO,
    device, socket or directory, a hard link unless ``links``, a bad component) or
    OSError (permissions, I/O). ``exact``: every name must be listed as given (no
    case-insensitive matches)."""
    if not parts:
        raise FileUnreadable("empty path")
    dfd = root if isinstance(root, int) else open_dir(root)
    own = not isinstance(root, int)
    try:
        for part in parts[:-1]:
            nfd = step_dir(dfd, part, exact)
            if own:
                os.close(dfd)
            dfd, own = nfd, True
        leaf = parts[-1]
        _check_part(leaf)
        if exact and leaf not in os.listdir(dfd):
            raise FileVanished(f"{printable(leaf)}: no such file")
        try:
            seen = os.stat(leaf, dir_fd=dfd, follow_symlinks=False)
        except OSError as exc:
            raise _os_error(exc, printable(leaf)) from exc
        if not stat.S_ISREG(seen.st_mode):  # never open a FIFO or a device at all
            raise FileUnreadable(file_kind(seen.st_mode))
        try:
            fd = os.open(leaf, _LEAF_FLAGS, dir_fd=dfd)
        except OSError as exc:
            raise _os_error(exc, printable(leaf)) from exc
    finally:
        if own:
            os.close(dfd)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) != (seen.st_dev, seen.st_ino):
        os.close(fd)  # swapped between the look and the open
        raise FileUnreadable(file_kind(st.st_mode) if not stat.S_ISREG(st.st_mode) else "replaced")
    why = hard_link(st, links)
    if why is not None:
        os.close(fd)
        raise FileUnreadable(why)
    return fd


@contextlib.contextmanager
def opened(
    root: str | os.PathLike[str] | int,
    parts: Sequence[str],
    *,
    exact: bool = False,
    links: bool = False,
) -> Iterator[tuple[int, os.stat_result]]:
    """``open_under`` as a context manager yielding (fd, fstat)."""
    fd = open_under(root, parts, exact=exact, links=links)
    try:
        yield fd, os.fstat(fd)
    finally:
        os.close(fd)


def read_all(fd: int, max_bytes: int) -> bytes:
    """The whole file behind ``fd``, or FileUnreadable when it is over ``max_bytes``
    (checked against the size and while reading: a file may grow meanwhile)."""
    size = os.fstat(fd).st_size
    if size > max_bytes:
        raise FileUnreadable(f"too large: {size} bytes (limit {max_bytes})")
    blocks: list[bytes] = []
    total = 0
    while True:
        block = os.read(fd, 1 << 20)
        if not block:
            break
        total += len(block)
        if total > max_bytes:
            raise FileUnreadable(f"too large: over {max_bytes} bytes")
        blocks.append(block)
    return b"".join(blocks)


@dataclass(frozen=True, slots=True)
class Entry:
    """A regular file found by ``walk``: its components below the root, its lstat and
    change stamp."""

    parts: tuple[str, ...]
    st: os.stat_result
    stamp: int


def change_stamp(st: os.stat_result) -> int:
    """What "unchanged" compares besides the size: mtime plus ctime. mtime alone
    misses an edit whose mtime was set back (a restore, ``touch -r``, a clock that
    jumped backwards); ctime cannot be set by programs and moves on every write."""
    return st.st_mtime_ns + st.st_ctime_ns


def refusal(st: os.stat_result, path: str, *, links: bool, max_path_bytes: int) -> str | None:
    """Why a regular file found at ``path`` is not read, or None: a hard link (unless
    ``links``), or a path of more than ``max_path_bytes`` bytes."""
    size = len(path_bytes(path))
    if size > max_path_bytes:
        return f"path of {size:,} bytes: longer than {max_path_bytes:,}, not indexed"
    return hard_link(st, links)


def read_file(
    root: str | os.PathLike[str] | int,
    parts: Sequence[str],
    max_bytes: int,
    *,
    exact: bool = False,
    links: bool = False,
) -> tuple[bytes, int]:
    """The bytes of ``root/parts…`` opened as ``open_under`` opens it, at most
    ``max_bytes`` (``read_all``), and the change stamp of what was read."""
    with opened(root, parts, exact=exact, links=links) as (fd, st):
        return read_all(fd, max_bytes), change_stamp(st)


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
    must_list: bool = False,
) -> Iterator[Entry]:
    """Regular files below ``root/start…`` in name order; ``wanted.keeps(name, rel,
    is_dir)`` says which folders are entered and which files kept (``rel``: the path
    below ``root/start``). No symlink is followed, not even one swapped in mid-walk.
    ``skip`` hears of names that are not UTF-8, trees deeper than ``max_depth``, a
    folder that cannot be listed (reason ``UNLISTED…``: what was found under it
    before is not gone), a symlink, FIFO, device or socket under a name kept.
    ``must_list``: a root that cannot be opened raises (FileVanished, FileUnreadable,
    OSError) instead."""

    def unlisted(parts: tuple[str, ...], exc: BaseException) -> None:
        if skip is not None:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            skip(parts, f"{UNLISTED}: {why}")

    try:
        fds = [open_dir(root)]
    except (FileVanished, FileUnreadable, OSError) as exc:
        if must_list:
            raise
        if not isinstance(exc, FileVanished):
            unlisted((), exc)
        return
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
                if not valid_utf8(entry.name) or len(parts) > max_depth:
                    if skip:
                        deep = f"deeper than {max_depth} directory levels"
                        bad = "directory name is not valid UTF-8"
                        skip((*base, *parts), bad if not valid_utf8(entry.name) else deep)
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
