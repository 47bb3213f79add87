"""``memindex-qmd``: a stand-in for QMD's ``qmd`` command line on memindex's index.

``entry`` is the command (standard library only: a search answered by a warm daemon
never imports the engine), ``main`` everything else and the warm daemon,
``collections`` QMD's collections and contexts, ``common`` what both share (modes,
folders, printing). It may import every layer below ``surfaces`` and
``surfaces``' socket client; nothing imports it but its own command.

Siblings it may import: ``surfaces.client``, ``surfaces.daemon``, ``surfaces.reading``.
"""
