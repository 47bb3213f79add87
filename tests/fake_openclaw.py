"""A stand-in for the `openclaw` command, for the install/uninstall bookkeeping tests
(tests/openclaw/test_openclaw_install.py): the three calls `memindex openclaw install |
uninstall` makes, on the file $OPENCLAW_CONFIG_PATH, as OpenClaw 2026.9.6 makes them:

    plugins install <dir> --force --accept-capabilities
        records plugins.installs.memindex and enables plugins.entries.memindex,
        selects it for the memory slot;
    plugins uninstall memindex --force
        removes both, and gives the slot to memory-core when memindex had it;
    config patch --stdin
        an RFC 7386 merge patch (null removes a key).

The real OpenClaw runs the same steps in tests/openclaw/test_openclaw_plugin.py; this one
answers in milliseconds, so every path of the bookkeeping can be tried. Each call is
appended to $FAKE_OPENCLAW_LOG."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any


def merge(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge(out.get(k), v)
    return out


def main(argv: list[str]) -> int:
    path = Path(os.environ["OPENCLAW_CONFIG_PATH"])
    with open(os.environ.get("FAKE_OPENCLAW_LOG", os.devnull), "a") as log:
        log.write(json.dumps(argv) + "\n")
    cfg: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
    plugins = cfg.setdefault("plugins", {})
    if argv[:2] == ["plugins", "install"]:
        plugins.setdefault("installs", {})["memindex"] = {"source": argv[2]}
        plugins.setdefault("entries", {}).setdefault("memindex", {})["enabled"] = True
        plugins.setdefault("slots", {})["memory"] = "memindex"
    elif argv[:3] == ["plugins", "uninstall", "memindex"]:
        if "memindex" not in plugins.get("installs", {}):
            print("plugin not installed: memindex", file=sys.stderr)
            return 1
        plugins["installs"].pop("memindex")
        plugins.get("entries", {}).pop("memindex", None)
        if plugins.get("slots", {}).get("memory") == "memindex":
            plugins["slots"]["memory"] = "memory-core"
    elif argv[:2] == ["config", "patch"]:
        cfg = merge(cfg, json.loads(sys.stdin.read()))
    else:
        print(f"fake openclaw: {argv} is not one of its calls", file=sys.stderr)
        return 2
    path.write_text(json.dumps(cfg, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
