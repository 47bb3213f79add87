"""Write config/memindex.toml and docs/CONFIG.md's table of config keys from the schema
(indexer/config/sections.py; indexer/config/docs.py renders them), and the OpenClaw
plugin's tool parameters from the protocol's table
(integrations/openclaw/src/schemas.json; indexer/surfaces/openclaw/schemas.py).

    .venv/bin/python scripts/gen_config.py          # write all three
    .venv/bin/python scripts/gen_config.py --check  # exit 1 if one is stale
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from indexer.config.docs import TABLE_END, TABLE_START, render_table, render_toml  # noqa: E402
from indexer.surfaces.openclaw.schemas import render as render_schemas  # noqa: E402

EXAMPLE = ROOT / "config" / "memindex.toml"
CONFIG_PAGE = ROOT / "docs" / "CONFIG.md"
SCHEMAS = ROOT / "integrations" / "openclaw" / "src" / "schemas.json"


def page_with_table(text: str) -> str:
    """``text`` (docs/CONFIG.md) with the table between its markers written anew."""
    start = text.index(TABLE_START) + len(TABLE_START)
    end = text.index(TABLE_END)
    return text[:start] + "\n" + render_table() + text[end:]


def main() -> int:
    check = "--check" in sys.argv[1:]
    stale = []
    for path, new in (
        (EXAMPLE, render_toml()),
        (CONFIG_PAGE, page_with_table(CONFIG_PAGE.read_text(encoding="utf-8"))),
        (SCHEMAS, render_schemas()),
    ):
        if not path.exists() or path.read_text(encoding="utf-8") != new:
            stale.append(path.relative_to(ROOT))
            if not check:
                path.write_text(new, encoding="utf-8")
    if check and stale:
        print(f"stale: {', '.join(map(str, stale))} (run scripts/gen_config.py)")
        return 1
    print(("wrote " if stale else "up to date: ") + (", ".join(map(str, stale)) or "all"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
