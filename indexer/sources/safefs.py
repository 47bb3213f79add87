"""The one way memindex opens a file under a root: never outside it, never blocking.

Every read of a workspace, extra-path or transcript file (discovery, sync, transcript
deltas, ``memory_get``, ``memindex-qmd get``) goes through ``open_under``:

* the root is opened as a directory, then each component below it with
  ``openat(dir_fd, name, O_DIRECTORY | O_NOFOLLOW)``: a component swapped for a
  symlink between a check and the open fails with ELOOP instead of being followed,
  so no path-string check is ever followed by an open by name;
* the leaf is looked at with ``fstatat`` (no open of a FIFO or a device at all), then
  opened with ``O_NOFOLLOW | O_NONBLOCK | O_NOCTTY`` and checked again with ``fstat``
  (a regular file, and the same inode the look saw): a file replaced by a FIFO
  mid-sync can neither hang the writer nor be read;
* a regular file with more than one name (a hard link) is refused unless the caller
  allows it (``limits.allowHardLinks``): a link made in the workspace to a file
  outside it would otherwise be indexed and served as if it were a memory;
* reads are bounded by a byte limit.

File names are bytes on Linux. Python hands a name that is not valid UTF-8 over with
surrogate escapes; ``valid_utf8`` says whether a name can be stored and shown, and
``printable`` gives the text to show for one that cannot.

Directory walks (``walk.walk``) hold one descriptor per level, are iterative and stop
at ``MAX_DEPTH`` levels, so a tree 1,000 levels deep costs neither recursion nor
thousands of descriptors.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from indexer.errors import FileUnreadable, FileVanished, file_kind

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
    "step_dir",
    "valid_utf8",
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


def file_entry(directory: str | os.PathLike[str], name: str) -> Entry | None:
    """The file ``name`` in ``directory`` as ``walk`` would yield it (not followed if
    a symlink), or None when it is not there or not a regular file."""
    try:
        st = os.lstat(os.path.join(directory, name))
    except OSError:
        return None
    return Entry((name,), st, change_stamp(st)) if stat.S_ISREG(st.st_mode) else None


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
