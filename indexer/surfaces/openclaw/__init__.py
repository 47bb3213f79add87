"""OpenClaw's side of memindex: ``memindex openclaw install|uninstall`` (``setup``),
what each install changed, per openclaw.json (``records``), the daemon install
starts and checks (``daemon``), the parity table (``features``) and the plugin's
tool schemas made from the method table (``schemas``). It may import every layer
below ``surfaces`` and ``surfaces``' service and client modules; the CLI imports it
when a command needs it.

Siblings it may import: ``surfaces.client``, ``surfaces.service``.
"""
