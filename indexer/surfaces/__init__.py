"""How memindex is reached: the daemon (``daemon`` with one ``agent`` runtime per agent,
``server`` on a Unix socket, ``client``, ``health``, ``service`` files), the CLI
(the ``cli`` package, ``reading`` for answering from the file when no
daemon runs), MCP (``mcp_server``), QMD's command line (the ``qmd`` package) and
OpenClaw's installer, records and parity table (the ``openclaw`` package).

The top layer: nothing below imports it.
"""
