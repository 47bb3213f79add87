"""The ``memindex`` command line's argument parser, the ``Call`` every command gets
and its terminal output (a progress bar); ``cli.py`` runs the commands."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO, TypeAlias

from indexer import __version__
from indexer.api.responses import ProgressState
from indexer.config import Config, Settings
from indexer.config.file import load_config, load_settings

__all__ = ["Call", "ProgressBar", "describe_progress", "parser"]


@dataclass(frozen=True)
class Call:
    """One command's invocation: its arguments, where it writes, and the config its
    global options select (loaded when the command asks)."""

    args: argparse.Namespace
    out: TextIO
    err: TextIO

    def config(self) -> Config:
        """The one agent the global options select."""
        a = self.args
        return load_config(
            a.config, workspace=a.workspace, agent=a.agent, openclaw=a.openclaw_config
        )

    def settings(self) -> Settings:
        """Every agent the global options select."""
        a = self.args
        return load_settings(
            a.config, workspace=a.workspace, agent=a.agent, openclaw=a.openclaw_config
        )

    def json(self, obj: Any) -> int:
        self.out.write(json.dumps(obj, ensure_ascii=False, indent=2) + "\n")
        return 0

    def global_args(self) -> list[str]:
        """The global options as given (absolute paths): a daemon this command starts
        serves the same config."""
        a = self.args
        out: list[str] = []
        for flag, value in (("--config", a.config), ("--workspace", a.workspace),
                            ("--openclaw-config", a.openclaw_config)):  # fmt: skip
            if value is not None:
                out += [flag, str(Path(value).absolute())]
        if a.agent is not None:
            out += ["--agent", a.agent]
        return out

    def setup_logging(self) -> None:
        """Log to stderr: INFO with timestamps for ``serve``, warnings for the rest
        (DEBUG with -v). Commands a daemon answers call it only when they read the
        index themselves (logging costs ~10 ms at start)."""
        import logging

        serve = self.args.command == "serve"
        logging.basicConfig(
            level=logging.DEBUG
            if self.args.verbose
            else logging.INFO
            if serve
            else logging.WARNING,
            format="%(asctime)s memindex %(levelname)s %(name)s: %(message)s"
            if serve
            else "memindex: %(levelname)s %(name)s: %(message)s",
            stream=self.err,
        )


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def describe_progress(p: ProgressState) -> str:
    """ "embedding 1,200 of 5,183 chunks (23%), 9.1/s, about 7 min left"."""
    unit = "chunks" if p["phase"] == "embedding" else "files"
    share = f" ({100 * p['done'] // p['total']}%)" if p["total"] else ""
    text = f"{p['phase']} {p['done']:,} of {p['total']:,} {unit}{share}"
    if p["perSecond"]:
        text += f", {p['perSecond']:g}/s"
    if p["etaS"] is not None and p["done"] < p["total"]:
        text += f", about {_duration(p['etaS'])} left"
    return text


class ProgressBar:
    """A one-line progress bar on a terminal; silent otherwise. Called with (done,
    total), or given a ``ProgressState`` (``show``: the indexer's files, then its
    chunks embedded, with the rate and the time left)."""

    def __init__(self, stream: TextIO, label: str) -> None:
        self.stream = stream
        self.label = label
        self.enabled = stream.isatty()
        self.last = 0.0
        self.shown = False

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled or total < 50 or not self._due(done < total):
            return
        self._draw(f"{self.label} {self._bar(done, total)} {done}/{total}")

    def show(self, p: ProgressState) -> None:
        if not self.enabled or p["total"] < 50 or not self._due(p["done"] < p["total"]):
            return
        self._draw(f"{self._bar(p['done'], p['total'])} {describe_progress(p)}")

    def _due(self, unfinished: bool) -> bool:
        now = time.monotonic()
        if now - self.last < 0.1 and unfinished:
            return False
        self.last = now
        return True

    @staticmethod
    def _bar(done: int, total: int, width: int = 24) -> str:
        filled = min(width, int(width * done / total)) if total else width
        return f"[{'#' * filled}{'.' * (width - filled)}]"

    def _draw(self, line: str) -> None:
        self.stream.write(f"\r\033[K{line[: _columns() - 1]}")
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            self.stream.write("\r\033[K")
            self.stream.flush()


def _columns() -> int:
    """The terminal's width, as shutil.get_terminal_size() gives it."""
    with contextlib.suppress(KeyError, ValueError):
        return int(os.environ["COLUMNS"])
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):  # no stdout, or not a terminal
        return 80


class _Formatter(argparse.HelpFormatter):
    """argparse's own formatter, minus its ``import shutil`` (with bz2 and lzma, ~3 ms
    of every process) for the terminal width."""

    def __init__(
        self,
        prog: str,
        indent_increment: int = 2,
        max_help_position: int = 24,
        width: int | None = None,
    ) -> None:
        width = _columns() - 2 if width is None else width
        super().__init__(prog, indent_increment, max_help_position, width)


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser using _Formatter; the subcommands' parsers are of this class too."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)


def _path(text: str) -> Path:
    """A path option's value; an empty one (an unset shell variable) is refused, not
    read as the current folder."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path (is a shell variable unset?)")
    return Path(text)


def _positive(text: str) -> int:
    """An option that takes a whole number from 1 up (argparse names the option)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is below 1")
    return value


def _unit(text: str) -> float:
    """An option that takes a number from 0 to 1."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0.0 <= value <= 1.0:  # NaN fails too
        raise argparse.ArgumentTypeError(f"{text} is not between 0 and 1")
    return value


_Sub: TypeAlias = "argparse._SubParsersAction[_Parser]"


def parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="memindex",
        description="Index an agent's Markdown memory and search it (BM25 keyword search, "
        "line-range citations).",
    )
    p.add_argument(
        "--config", type=_path, help="config file (default ~/.config/memindex/config.toml)"
    )
    p.add_argument("--workspace", type=_path, help="agent workspace holding MEMORY.md and memory/")
    p.add_argument("--agent", help="agent id: names the index file <state dir>/<agent>.sqlite")
    p.add_argument(
        "--openclaw-config",
        type=_path,
        help="take agents, workspaces and memorySearch settings from an openclaw.json",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="log details to stderr")
    p.add_argument("--version", action="version", version=f"memindex {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    _read_commands(sub)
    _admin_commands(sub)
    _daemon_commands(sub)
    return p


def _read_commands(sub: _Sub) -> None:
    """index, search, get, status, audit."""
    s = sub.add_parser("index", help="index new and changed files, drop deleted ones")
    s.add_argument("--force", action="store_true", help="rebuild the whole index")
    s.add_argument("--json", action="store_true", help="print the sync report as JSON")

    _search_command(sub)

    s = sub.add_parser("get", help="print lines of a memory file")
    s.add_argument("path", help="path as shown in search results, e.g. memory/2026-11-21.md")
    s.add_argument(
        "--from", dest="start", type=_positive, default=None, help="first line (1-based)"
    )
    s.add_argument("--lines", type=_positive, default=None, help="number of lines (default: all)")
    s.add_argument(
        "--raw", action="store_true", help="a transcript's JSON events, not its messages"
    )
    s.add_argument("--json", action="store_true", help="print the memory_get result as JSON")

    s = sub.add_parser("status", help="show what the index holds and its health")
    s.add_argument("--json", action="store_true", help="print the status object as JSON")

    s = sub.add_parser(
        "audit", help="what is wrong with the memory: cut, stale, duplicated, unfindable, secrets"
    )
    s.add_argument(
        "--kind",
        action="append",
        choices=["bootstrap", "stale", "duplicates", "conflicts", "unfindable", "secrets"],
        help="only this kind of finding (repeatable)",
    )
    s.add_argument("--json", action="store_true", help="print the memory_audit result as JSON")


def _search_command(sub: _Sub) -> None:
    s = sub.add_parser("search", help="search the index")
    s.add_argument("query", help='words, "quoted phrases", IDs, paths')
    s.add_argument(
        "--no-daemon",
        action="store_true",
        help="never start a daemon (a search that loads a model starts one for the next)",
    )
    s.add_argument(
        "--max-results", type=_positive, default=None, help="number of results (default 6)"
    )
    s.add_argument("--min-score", type=_unit, default=None, help="drop weaker results (0..1)")
    s.add_argument(
        "--source", choices=["memory", "sessions", "all"], default="all", help="which source"
    )
    s.add_argument(
        "--gate", action="store_true", help="answer small talk and /commands with no search"
    )
    s.add_argument(
        "--mode",
        choices=["keyword", "vector", "hybrid"],
        default=None,
        help="search mode (default: hybrid when vectors are built, else keyword)",
    )
    s.add_argument(
        "--explain", action="store_true", help="show each result's score parts (BM25, cosine, ...)"
    )
    s.add_argument(
        "--abstain",
        action="store_true",
        help="print nothing when the best results hold too little of the question "
        "(query.abstainBelow): it declines a question about a name memory never "
        "mentions; with the bundled models it cannot tell most other questions memory "
        "has no answer to (docs/SEARCH.md, Knowing when nothing is relevant)",
    )
    s.add_argument(
        "--as-of",
        default=None,
        metavar="TIME",
        help='when the question is asked, ISO 8601 (what "yesterday" means; default now)',
    )
    s.add_argument(
        "--time-zone", default=None, metavar="ZONE", help="e.g. Europe/Lisbon (query.timeZone)"
    )
    s.add_argument("--json", action="store_true", help="print the memory_search result as JSON")


def _admin_commands(sub: _Sub) -> None:
    """distill, mcp, doctor, migrate, model."""
    s = sub.add_parser("distill", help="transcript batches for a distiller (init | run | commit)")
    s.add_argument("action", choices=["init", "run", "commit"], help="what to do")
    s.add_argument("--batch-file", help="with commit: the batch file that was consumed")

    s = sub.add_parser("mcp", help="serve memory_search / memory_get / status over MCP (stdio)")

    s = sub.add_parser("doctor", help="check config, index, extensions, provider and daemon")
    s.add_argument("--json", action="store_true", help="print the checks as JSON")

    s = sub.add_parser(
        "migrate", help="copy the SQLite index into PostgreSQL, vectors and cache included"
    )
    s.add_argument("--to", required=True, metavar="URL", help="postgresql://user@host/db")
    s.add_argument(
        "--replace", action="store_true", help="overwrite an index the agent has there already"
    )
    s.add_argument("--json", action="store_true", help="print what was copied as JSON")

    s = sub.add_parser("model", help="fetch a local embedding model by name (pull), or list them")
    s.add_argument("action", choices=["pull", "list"], help="what to do")
    s.add_argument("name", nargs="?", help="with pull: e5-small, minilm or hf:<owner>/<repo>/<f>")
    s.add_argument(
        "--use", action="store_true", help="with pull: make the config file use this model"
    )
    s.add_argument("--force", action="store_true", help="with pull: fetch and convert again")
    s.add_argument("--json", action="store_true", help="print the result as JSON")


def _daemon_commands(sub: _Sub) -> None:
    """serve, service, openclaw."""
    s = sub.add_parser("serve", help="run the daemon: watch files, answer on the Unix socket")
    s.add_argument("--socket", type=Path, default=None, help="socket path (default from config)")
    s.add_argument(
        "--idle-exit",
        type=float,
        default=None,
        metavar="SECONDS",
        help="exit after this long without a request (the daemon a search starts: 1800)",
    )
    s.add_argument(
        "--stop", action="store_true", help="stop the daemon answering on the socket, and exit"
    )

    s = sub.add_parser("service", help="install the daemon as a systemd / launchd user service")
    s.add_argument("action", choices=["install", "print"], help="write the unit, or print it")
    s.add_argument(
        "--kind",
        choices=["systemd", "launchd"],
        default=None,
        help="service manager (default: launchd on macOS, else systemd)",
    )

    s = sub.add_parser(
        "openclaw", help="put memindex in OpenClaw's memory slot (install), or take it out"
    )
    s.add_argument("action", choices=["install", "uninstall"], help="what to do")
    s.add_argument(
        "--openclaw", default=None, help="the openclaw command (default: openclaw on PATH)"
    )
    s.add_argument(
        "--no-dreaming",
        action="store_true",
        help="switch OpenClaw's dreaming off instead of denying memory-core's tools",
    )
    s.add_argument(
        "--service", action="store_true", help="run the daemon as a systemd / launchd user service"
    )
    s.add_argument("--plugin", type=Path, default=None, help="install this plugin (dir or .tgz)")
    s.add_argument("--json", action="store_true", help="print what was done as JSON")
