"""Reading a configuration file the user named (memindex's TOML, an openclaw.json with
``read_json5``): a regular file only, opened without blocking (a FIFO or a device
under the name never stalls a command), at most ``MAX_CONFIG_BYTES``, as UTF-8. A
symlink is followed: the user chose the path (dotfile managers link them)."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from indexer.errors import ConfigError, file_kind

__all__ = ["MAX_CONFIG_BYTES", "read_config_text", "read_json5"]

MAX_CONFIG_BYTES = 16 * 1024 * 1024


def read_config_text(path: Path) -> str:
    """The text of the config file ``path``; OSError when it is not there or cannot
    be opened, ConfigError when it is not a regular file, too large or not UTF-8."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ConfigError(f"{path} is {file_kind(st.st_mode)}, not a file")
        if st.st_size > MAX_CONFIG_BYTES:
            raise ConfigError(f"{path}: {st.st_size:,} bytes, over {MAX_CONFIG_BYTES:,}")
        data = b""
        while len(data) <= MAX_CONFIG_BYTES:
            block = os.read(fd, 1 << 20)
            if not block:
                break
            data += block
    finally:
        os.close(fd)
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{path}: over {MAX_CONFIG_BYTES:,} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not valid UTF-8 (at byte {exc.start})") from exc


def read_json5(path: Path) -> Any:
    """An openclaw.json's content, or a one-line ConfigError (unreadable, not JSON5, deep)."""
    import json5

    try:
        return json5.loads(read_config_text(path))
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from exc
    except RecursionError:
        raise ConfigError(f"{path}: nested too deep to read") from None
    except ValueError as exc:
        raise ConfigError(f"{path}: not valid JSON5: {exc}") from exc
