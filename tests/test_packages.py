"""Each package is a folder a reader can hold: no more than ``MAX_FLAT`` modules side
by side, and each sub-package says in its ``__init__`` docstring which modules of its
parent it may import (a paragraph ``Siblings it may import: ``a``, ``b.c``.``, or ``none.``).
These tests read those lines and hold the code to them; the layering between the
top-level packages is ``test_layout``'s."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from test_layout import REPO, imports, modules

MAX_FLAT = 15
RULE = "Siblings it may import:"


def packages() -> dict[str, Path]:
    return {
        m: p.parent
        for m, p in modules().items()
        if p.name == "__init__.py" and m.startswith(("indexer", "providers"))
    }


def flat_counts() -> dict[str, int]:
    return {
        m: sum(1 for p in folder.glob("*.py") if p.name != "__init__.py")
        for m, folder in packages().items()
    }


def test_no_package_holds_more_than_fifteen_modules_flat() -> None:
    crowded = {m: n for m, n in flat_counts().items() if n > MAX_FLAT}
    assert crowded == {}, f"split these packages into sub-packages: {crowded}"


def sibling_rule(init: Path) -> list[str] | None:
    """The parent's modules a sub-package may import, as dotted prefixes under
    ``indexer.`` (``[]`` for ``none``), or None when its docstring has no rule."""
    doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
    if RULE not in doc:
        return None
    text = " ".join(doc[doc.index(RULE) + len(RULE) :].split("\n\n")[0].split())
    if text.rstrip(".").strip().lower() == "none":
        return []
    return [f"indexer.{name}" for name in re.findall(r"``([\w.]+)``", text)]


def sibling_breaks(known: dict[str, Path]) -> list[str]:
    """Every import of a sub-package's module into its parent package that the
    sub-package's rule does not allow, and every sub-package without a rule."""
    broken = []
    for pkg, init in ((m, p) for m, p in known.items() if p.name == "__init__.py"):
        if pkg.count(".") < 2 or not pkg.startswith("indexer."):
            continue  # the top-level packages are layered by test_layout.GROUPS
        parent = pkg.rsplit(".", 1)[0]
        allowed = sibling_rule(init)
        if allowed is None:
            broken.append(f"{pkg}: no 'Siblings it may import:' line in its __init__")
            continue
        for mod, path in known.items():
            if mod != pkg and not mod.startswith(pkg + "."):
                continue
            for target in imports(mod, path) & known.keys():
                inside = target == pkg or target.startswith(pkg + ".")
                if inside or not target.startswith(parent + "."):
                    continue
                if not any(target == a or target.startswith(a + ".") for a in allowed):
                    broken.append(f"{mod} -> {target} (not in {pkg}'s rule)")
    return sorted(broken)


def test_sub_packages_import_only_the_siblings_they_name() -> None:
    broken = sibling_breaks(modules())
    assert broken == [], "imports against a package's rule:\n" + "\n".join(broken)


def test_the_sibling_check_bites(tmp_path: Path) -> None:
    known = modules()
    probe = tmp_path / "probe.py"
    probe.write_text("from indexer.search.pipeline import STAGES\n", encoding="utf-8")
    known["indexer.search.query.probe"] = probe  # query understanding may import none
    assert sibling_breaks(known) == [
        "indexer.search.query.probe -> indexer.search.pipeline (not in indexer.search.query's rule)"
    ]
    init = tmp_path / "__init__.py"
    init.write_text('"""A package with no rule."""\n', encoding="utf-8")
    known = modules()
    known["indexer.search.norule"] = init
    assert "indexer.search.norule: no 'Siblings it may import:' line in its __init__" in (
        sibling_breaks(known)
    )


def test_the_count_matches_the_folders() -> None:
    counts = flat_counts()
    assert counts["indexer.search.stages"] == len(
        [p for p in (REPO / "indexer/search/stages").glob("*.py") if p.name != "__init__.py"]
    )
