"""Setting one key of a config file in place (``memindex model pull --use``), keeping
the user's comments and layout: the key's line is replaced, or added under its table,
or the table is added at the end. The result is parsed again and must differ from the
old file in that key only; where the file's shape defeats this (a dotted key or an
inline table naming the section), nothing is written and the error says what to add
by hand."""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path
from typing import Any

from indexer.errors import ConfigError

__all__ = ["set_key"]


def _toml_value(value: str | float) -> str:
    if isinstance(value, float):
        return repr(value)
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def set_key(path: Path, table: str, key: str, value: str | float) -> None:
    """``[table] key = value`` in the TOML file at ``path`` (created if missing)."""
    import tomllib

    path = path.resolve() if path.is_symlink() else path  # a linked dotfile: edit its target
    parts = tuple(table.split("."))
    line = f"{key} = {_toml_value(value)}"
    by_hand = f"add to {path}:\n[{table}]\n{line}"
    old_text = path.read_text(encoding="utf-8") if path.exists() else ""
    try:
        want = tomllib.loads(old_text)  # becomes what the new file must read as
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc}); not changed") from exc
    lines = old_text.splitlines(keepends=True)
    header = re.compile(r"^\s*\[\s*" + r"\s*\.\s*".join(map(re.escape, parts)) + r"\s*\]\s*(#.*)?$")
    start = next((i for i, text in enumerate(lines) if header.match(text)), None)
    if start is None:
        prefix = old_text if not old_text or old_text.endswith("\n") else old_text + "\n"
        new_text = prefix + ("\n" if prefix else "") + f"[{table}]\n{line}\n"
    else:
        end = next(
            (i for i in range(start + 1, len(lines)) if re.match(r"^\s*\[", lines[i])), len(lines)
        )
        mine = re.compile(r"^\s*" + re.escape(key) + r"\s*=")
        at = next((i for i in range(start + 1, end) if mine.match(lines[i])), None)
        if at is None:
            lines.insert(start + 1, line + "\n")
        else:
            lines[at] = line + "\n"
        new_text = "".join(lines)
    try:
        new = tomllib.loads(new_text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: cannot set {table}.{key} in place; {by_hand}") from exc
    target: Any = want
    for part in parts:
        target = target.setdefault(part, {}) if isinstance(target, dict) else None
    if not isinstance(target, dict):
        raise ConfigError(f"{path}: {table} is not a table; {by_hand}")
    target[key] = value
    if new != want:
        raise ConfigError(f"{path}: cannot set {table}.{key} in place; {by_hand}")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(new_text)
        if path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o7777)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
