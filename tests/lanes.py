"""The fast lane's refusal, for the helpers that start daemons and gateways (no
pytest here: ``bench/`` scripts import those helpers)."""

from __future__ import annotations

import os

FAST_LANE = "MEMINDEX_TEST_LANE"  # set to "fast" by conftest for a test not marked slow


def fast_lane_refuses(what: str) -> None:
    """Called where the tests start a daemon or a gateway process."""
    if os.environ.get(FAST_LANE) == "fast":
        raise AssertionError(f"a test in the fast lane starts {what}: mark it slow")
