"""The package layout is the architecture: imports run one way and never in a circle.

Layers, lowest first (a module may import its own group and any lower layer):

0. ``errors``, ``config`` (the package: model, schema, sections, stages, file, docs,
   edit), ``openclaw`` — what everything reads (these may import each other; the
   cycle check still applies);
1. ``api`` (the request/response types and method table), ``selection`` (which
   embedding provider) — over ``providers/``;
2. ``sources/`` and ``store/`` — side by side, neither imports the other;
3. ``indexing/`` (the writer) and ``search/`` (the reader) — side by side;
4. ``engine`` — an Indexer and a Searcher on one store, for one-process callers;
5. ``surfaces/`` — daemon, server, client, CLI, MCP, QMD.

``providers/`` never imports ``indexer``. Imports made inside functions (deferred to
keep start-up fast) and under ``TYPE_CHECKING`` count the same as top-level ones.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

GROUPS = {
    "errors": 0,
    "config": 0,
    "openclaw": 0,
    "api": 1,
    "selection": 1,
    "sources": 2,
    "store": 2,
    "indexing": 3,
    "search": 3,
    "engine": 4,
    "surfaces": 5,
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(mod: str, path: Path) -> set[str]:
    """Every module ``mod`` (at ``path``) imports (absolute names; relative ones
    resolved)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = mod.split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            found.add(mod)
            # `from indexer.x import y` may import the module indexer.x.y
            found.update(f"{mod}.{a.name}" for a in node.names)
    return found


def modules() -> dict[str, Path]:
    out = {}
    for top in ("indexer", "providers"):
        for p in (REPO / top).rglob("*.py"):
            out[module_name(p)] = p
    return out


def group(mod: str) -> str | None:
    parts = mod.split(".")
    if parts[0] != "indexer":
        return None
    return parts[1] if len(parts) > 1 else ""


def test_every_module_is_in_a_layer() -> None:
    unplaced = sorted(m for m in modules() if m.startswith("indexer.") and group(m) not in GROUPS)
    assert unplaced == [], f"place these modules in a layer (tests/test_layout.py): {unplaced}"


def wrong_way(known: dict[str, Path]) -> list[str]:
    wrong = []
    for mod, path in known.items():
        for target in imports(mod, path) & known.keys():
            if mod.startswith("providers"):
                if target.startswith("indexer"):
                    wrong.append(f"{mod} -> {target}")
                continue
            src, dst = group(mod), group(target)
            if dst is None or dst == "" or src == "" or src == dst:
                continue  # providers, the package root (the version), its own group
            assert src is not None
            if GROUPS[dst] > GROUPS[src] or (GROUPS[dst] == GROUPS[src] and GROUPS[src] > 0):
                wrong.append(f"{mod} ({src}) -> {target} ({dst})")
    return sorted(wrong)


def test_imports_run_one_way() -> None:
    wrong = wrong_way(modules())
    assert wrong == [], "imports against the layering:\n" + "\n".join(wrong)


def test_no_import_cycles_between_modules() -> None:
    known = modules()
    graph = {m: sorted(imports(m, p) & known.keys() - {m}) for m, p in known.items()}
    # a package imports its own submodules through __init__ only by name; drop
    # the edge from a module to the package it lives in (Python runs __init__ first)
    for m, deps in graph.items():
        graph[m] = [d for d in deps if not m.startswith(d + ".")]
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert cycles == [], f"import cycles: {cycles}"


def test_the_checker_sees_a_wrong_way_import(tmp_path: Path) -> None:
    """The rule bites: a store module importing the read path is reported, and so
    is a provider importing indexer."""
    store_probe = tmp_path / "store_probe.py"
    store_probe.write_text("from indexer.search.query.parse import parse_query\n", encoding="utf-8")
    provider_probe = tmp_path / "provider_probe.py"
    provider_probe.write_text("import indexer.config\n", encoding="utf-8")
    known = modules() | {"indexer.store.probe": store_probe, "providers.probe": provider_probe}
    assert wrong_way(known) == [
        "indexer.store.probe (store) -> indexer.search.query.parse (search)",
        "providers.probe -> indexer.config",
    ]


MAX_LINES = 400
DRIVERS = ("apsw", "sqlite3", "psycopg", "psycopg_pool", "sqlite_vec")
# The index's SQL lives in the store; OpenClaw's agent database, a foreign file read
# only, is read beside its transcript source (and by that one module alone).
DRIVER_HOMES = ("indexer.store", "indexer.sources.transcripts.agent_db")


def test_no_module_is_longer_than_a_reader_holds() -> None:
    long = sorted(
        f"{m} ({n} lines)"
        for m, p in modules().items()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    )
    assert long == [], f"split these modules (at most {MAX_LINES} lines): {long}"


def driver_imports(known: dict[str, Path]) -> list[str]:
    """Modules outside ``DRIVER_HOMES`` that import a database driver."""
    return sorted(
        {
            f"{mod} -> {top}"
            for mod, path in known.items()
            if not any(mod == home or mod.startswith(home + ".") for home in DRIVER_HOMES)
            for top in (t.split(".")[0] for t in imports(mod, path))
            if top in DRIVERS
        }
    )


def test_only_the_store_imports_a_database_driver() -> None:
    wrong = driver_imports(modules())
    where = "outside the store and the agent-database reader"
    assert wrong == [], f"database drivers imported {where}:\n" + "\n".join(wrong)


def test_the_driver_check_bites(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("def f():\n    import apsw\n    from psycopg import sql\n", encoding="utf-8")
    known = {
        "indexer.search.probe": probe,
        "indexer.store.fine": probe,
        "indexer.sources.transcripts.agent_db": probe,
        "indexer.sources.transcripts.probe": probe,
    }
    assert driver_imports(known) == [
        "indexer.search.probe -> apsw",
        "indexer.search.probe -> psycopg",
        "indexer.sources.transcripts.probe -> apsw",
        "indexer.sources.transcripts.probe -> psycopg",
    ]


def test_the_architecture_page_lists_every_module() -> None:
    """docs/ARCHITECTURE.md's module list is the code's: every module of ``indexer``
    and ``providers`` has its line there, and every line names a module that exists."""
    import re

    page = (REPO / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^- `((?:indexer|providers)/[\w/]+\.py)`", page, re.M))
    present = {
        str(p.relative_to(REPO))
        for root in ("indexer", "providers")
        for p in (REPO / root).rglob("*.py")
        if p.name != "__init__.py" and "openclaw_plugin" not in p.parts
    }
    assert sorted(present - listed) == [], "modules missing from docs/ARCHITECTURE.md"
    assert sorted(listed - present) == [], "docs/ARCHITECTURE.md names modules that are gone"


def test_no_provider_is_declared_outside_the_registry() -> None:
    """The embedding providers are declared once (providers/names.py): no module of
    ``indexer`` spells a provider's API key variable or lists two or more provider
    names in one literal (a second table a new provider would have to be added to; a
    list with other names too, such as the rerankers', is another table)."""
    import re

    from providers.names import ORDER, PROVIDERS

    keys = {k for p in PROVIDERS for k in p.key_env}
    found = []
    for path in sorted((REPO / "indexer").rglob("*.py")):
        if "openclaw_plugin" in path.parts:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                named = [k for k in keys if re.search(rf"\b{k}\b", node.value)]
                if named:
                    found.append(f"{path.relative_to(REPO)}:{node.lineno} names {named}")
            if isinstance(node, (ast.Tuple, ast.List, ast.Set, ast.Dict)):
                items = node.keys if isinstance(node, ast.Dict) else node.elts
                values = {e.value for e in items if isinstance(e, ast.Constant)}
                names = values & set(ORDER)
                other = values - set(ORDER) - {"auto", "none", ""}  # another list (rerankers)
                if len(names) >= 2 and not other:
                    found.append(f"{path.relative_to(REPO)}:{node.lineno} lists {sorted(names)}")
    assert found == []


ROOTS = {"indexer/engine.py"}  # the one composition root


def test_the_surfaces_put_no_index_together_themselves() -> None:
    """A surface (CLI, MCP, memindex-qmd, doctor, the daemon's service) asks
    ``indexer/engine.py`` for an agent's index, searcher or provider: none opens a
    backend, loads a provider, or makes a ``Searcher`` or ``Indexer`` of its own."""
    banned_calls = {"backend_for", "select_provider", "Searcher", "Indexer"}
    banned_from = {"indexer.store.backend", "indexer.indexing.writer"}
    found = []
    for path in sorted((REPO / "indexer" / "surfaces").rglob("*.py")):
        rel = str(path.relative_to(REPO))
        if rel in ROOTS or "openclaw_plugin" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module in banned_from:
                found.append(f"{rel}:{node.lineno} imports {node.module}")
            if (
                isinstance(node, ast.ImportFrom)
                and node.module == "indexer.selection"
                and any(a.name == "select_provider" for a in node.names)
            ):
                found.append(f"{rel}:{node.lineno} imports select_provider")
            if isinstance(node, ast.Call):
                f = node.func
                name = (
                    f.id
                    if isinstance(f, ast.Name)
                    else f.attr
                    if isinstance(f, ast.Attribute)
                    else ""
                )
                if name in banned_calls:
                    found.append(f"{rel}:{node.lineno} calls {name}")
    assert found == []


# The two MemoryServices: what answers the table's methods (the daemon's, and the
# direct path's for the CLI, MCP and memindex-qmd).
SERVICES = {"indexer/surfaces/daemon_service.py", "indexer/surfaces/reading.py"}
# Write-path parts a surface may name: the progress a bar shows, and the one-off
# transfer of an index to another store (``memindex migrate``).
WRITE_PARTS = {"indexer.indexing.progress", "indexer.indexing.transfer"}


def _runtime_imports(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, module) of every import not under ``if TYPE_CHECKING:``."""
    typing_only: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING":
            typing_only |= {id(n) for n in ast.walk(node)}
    found = []
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.module:
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            found.extend((node.lineno, a.name) for a in node.names)
    return found


def test_no_surface_calls_below_the_method_table() -> None:
    """A surface answers reads through ``api.dispatch`` on a service (or a daemon's
    ``Client``) and writes through ``engine``: only the two services import the read
    path (``indexer.search``), and no surface imports the write path
    (``indexer.indexing``) beyond its progress record and the migrate tool."""
    found = []
    for path in sorted((REPO / "indexer" / "surfaces").rglob("*.py")):
        rel = str(path.relative_to(REPO))
        if "openclaw_plugin" in path.parts:
            continue
        for line, module in _runtime_imports(ast.parse(path.read_text(encoding="utf-8"))):
            if module.startswith("indexer.search") and rel not in SERVICES:
                found.append(f"{rel}:{line} imports {module}")
            if module.startswith("indexer.indexing") and module not in WRITE_PARTS:
                found.append(f"{rel}:{line} imports {module}")
    assert found == []


# What may make or reorder a search's candidates: the pipeline and its stages (and
# the record itself). Everything else of the read path only renders them, reads the
# index or understands the query.
RANKERS = {"indexer/search/candidates.py", "indexer/search/pipeline.py"}


def rank_leaks(paths: list[Path]) -> list[str]:
    """Modules of ``indexer/search`` outside the pipeline that use ``Candidate`` at
    run time (make, reorder or rescore hits) or sort anything named ``hits``."""
    found = []
    for path in paths:
        rel = str(path.relative_to(REPO)) if path.is_relative_to(REPO) else path.name
        if rel in RANKERS or "/stages/" in rel:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for line, module in _runtime_imports(tree):
            if module == "indexer.search.candidates":
                node = next(
                    n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.lineno == line
                )
                if any(a.name == "Candidate" for a in node.names):
                    found.append(f"{rel}:{line} imports Candidate")
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                f = node.func
                name = (
                    f.id
                    if isinstance(f, ast.Name)
                    else f.attr
                    if isinstance(f, ast.Attribute)
                    else ""
                )
                target = (
                    f.value
                    if isinstance(f, ast.Attribute)
                    else (node.args[0] if node.args else None)
                )
                if (
                    name in ("sort", "sorted")
                    and isinstance(target, ast.Name)
                    and "hit" in target.id
                ):
                    found.append(f"{rel}:{node.lineno} sorts {target.id}")
    return found


def test_only_the_pipeline_orders_search_results() -> None:
    paths = sorted((REPO / "indexer" / "search").rglob("*.py"))
    assert rank_leaks(paths) == []


def test_the_order_check_bites(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from indexer.search.candidates import Candidate, ChunkRows\n"
        "def f(hits):\n    hits.sort(key=len)\n    return sorted(hits)\n",
        encoding="utf-8",
    )
    assert rank_leaks([probe]) == [
        "probe.py:1 imports Candidate",
        "probe.py:3 sorts hits",
        "probe.py:4 sorts hits",
    ]
