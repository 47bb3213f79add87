"""The ``memindex`` command line. ``main(argv)`` takes its arguments so tests call it.

A command is one entry in ``COMMANDS`` (its parser in ``parts.parser``); the
commands that read the index go through the method table (``api.METHODS``) like
every other surface, by way of ``reading.read_call``.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import TextIO

from indexer.errors import DAMAGED_HINT, MemindexError, index_damaged
from indexer.surfaces.cli.parts import Call, parser

# Each command imports what it needs when it runs, its own module included: a search,
# get or status answered by the daemon needs neither the engine nor numpy
# (bench/process_bench.py), nor logging (~10 ms): these commands set it up only when
# they read the file themselves; an index never imports the admin commands.

__all__ = ["COMMANDS", "main"]

# command -> (module of indexer.surfaces.cli, function)
COMMANDS: dict[str, tuple[str, str]] = {
    "index": ("query", "run_index"),
    "search": ("query", "run_search"),
    "get": ("query", "run_get"),
    "status": ("status", "run_status"),
    "audit": ("audit", "run_audit"),
    "doctor": ("status", "run_doctor"),
    "serve": ("admin", "run_serve"),
    "mcp": ("admin", "run_mcp"),
    "service": ("admin", "run_service"),
    "openclaw": ("admin", "run_openclaw"),
    "migrate": ("admin", "run_migrate"),
    "model": ("model", "run_model"),
    "distill": ("admin", "run_distill"),
}


def command(name: str) -> Callable[[Call], int]:
    """The function that runs the command ``name``."""
    module, function = COMMANDS[name]
    run: Callable[[Call], int] = getattr(
        importlib.import_module(f"indexer.surfaces.cli.{module}"), function
    )
    return run


# Commands that ask the daemon when one serves the index (they log only when not).
_DAEMON_COMMANDS = frozenset({"index", "search", "get", "status", "audit"})


def main(
    argv: Sequence[str] | None = None, *, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    args = parser().parse_args(argv)
    c = Call(args, out or sys.stdout, err or sys.stderr)
    if args.command not in _DAEMON_COMMANDS:
        c.setup_logging()
    try:
        return command(args.command)(c)
    except MemindexError as exc:
        c.err.write(f"memindex: error: {exc.message}\n")
        return 2
    except KeyboardInterrupt:
        c.err.write("memindex: interrupted\n")
        return 130
    except BrokenPipeError:  # `memindex search … | head`: the reader has gone
        _quiet_stdout()
        return 0
    except Exception as exc:  # a bug: one line (the traceback with -v), never a crash dump
        if index_damaged(exc):  # a page read failed after the file opened: not a bug
            c.err.write(f"memindex: error: {DAMAGED_HINT.format(exc)}\n")
            return 2
        if args.verbose:
            import logging

            c.setup_logging()  # a no-op when the command set it up already
            logging.getLogger("memindex").exception("internal error")
        c.err.write(
            f"memindex: internal error: {type(exc).__name__}: {exc} "
            "(a bug: please report it; -v shows the traceback)\n"
        )
        return 2


def _quiet_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not fail too."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
