"""``python -m indexer.surfaces.qmd``: the full command (``main``)."""

from indexer.surfaces.qmd.main import main

main()
