"""How memindex is reached: the daemon (``daemon`` with one ``agent`` runtime per agent,
``server`` on a Unix socket, ``client``, ``health``, ``service`` files), the CLI
(``cli``, ``cli_parts``, ``doctor``, ``reading`` for answering from the file when no
daemon runs), MCP (``mcp_server``) and QMD's command line (``qmd``, ``qmd_entry``,
``qmd_common``).

The top layer: nothing below imports it.
"""
