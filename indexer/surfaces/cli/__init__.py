"""The ``memindex`` command line: ``main`` (the commands' table), ``parts`` (the
parser, the call's settings, the progress bar), one module per group of commands
(``query``: index, search, get; ``status``: status, doctor through ``doctor``;
``admin``: serve, mcp, service, openclaw, migrate, distill; ``model``; ``audit``),
and ``autostart`` (the daemon a hybrid search starts for the next ones). It may
import every layer below ``surfaces`` and the other surfaces (a command may serve);
nothing imports it but its entry point.

Siblings it may import: ``surfaces.client``, ``surfaces.daemon``, ``surfaces.mcp_server``,
``surfaces.openclaw``, ``surfaces.reading``, ``surfaces.server``, ``surfaces.service``.
"""

from indexer.surfaces.cli.main import COMMANDS, main

__all__ = ["COMMANDS", "main"]
