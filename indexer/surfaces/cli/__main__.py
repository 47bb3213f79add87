"""``python -m indexer.surfaces.cli``: the ``memindex`` command."""

import sys

from indexer.surfaces.cli.main import main

sys.exit(main())
