"""The OpenClaw plugin (integrations/openclaw) type-checks, and one module of it reaches
into OpenClaw. ``tsc --noEmit`` checks its JavaScript against its JSDoc types, the
host's in types/host.d.ts (integrations/openclaw/tsconfig.json: strict), with the
TypeScript OpenClaw 2026.9.6 depends on and Node 24's types, both installed by
scripts/setup_openclaw.sh (scripts/test.sh runs the same command as its "== tsc"
step); the declared host types are held against OpenClaw's own declarations. src/host.js
alone loads OpenClaw's SDK or memory-core's internal files, with the table of OpenClaw
releases each internal was checked against (``TESTED``)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from openclaw_home import CACHE, NODE, OPENCLAW, PLUGIN, require_openclaw

TSC = CACHE / "oc/node_modules/typescript/bin/tsc"
TYPE_ROOTS = CACHE / "types/node_modules/@types"
HOST = "src/host.js"


@pytest.mark.slow  # about 3 s of CPU
def test_the_plugin_type_checks() -> None:
    # fails when scripts/setup_openclaw.sh has not run (skipped only when asked, as every
    # test of the real OpenClaw is: MEMINDEX_SKIP_OPENCLAW=1)
    require_openclaw()
    missing = [str(p) for p in (TSC, TYPE_ROOTS / "node/package.json") if not p.exists()]
    assert not missing, f"not installed: {missing}; run bash scripts/setup_openclaw.sh"
    r = subprocess.run(
        [str(NODE), str(TSC), "--noEmit", "-p", str(PLUGIN), "--typeRoots", str(TYPE_ROOTS)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stdout[-8000:] + r.stderr[-2000:]


# types/host.d.ts against OpenClaw 2026.9.6's own .d.ts, where OpenClaw has them (its
# SDK modules without one, such as session-visibility, are loaded by host.js only with
# the functions memindex calls, and driven by tests/openclaw/test_openclaw_parity.py).
CONFORMANCE = """
import type {
  MemoryPluginCapability,
  OpenClawConfig,
  OpenClawPluginApi,
  OpenClawPluginToolContext,
} from "openclaw/plugin-sdk/core";
import type * as MemoryHostCore from "openclaw/plugin-sdk/memory-host-core";
import type * as SessionStoreRuntime from "openclaw/plugin-sdk/session-store-runtime";
import type * as Mine from "@TYPES@";

// what OpenClaw gives the plugin has what the plugin reads of it
declare const api: OpenClawPluginApi;
export const a: Mine.PluginApi = api;
declare const ctx: OpenClawPluginToolContext;
export const t: Mine.ToolContext = ctx;
declare const cfg: OpenClawConfig;
export const c: Mine.OpenClawConfig = cfg;
declare const hostCore: typeof MemoryHostCore;
export const h: Mine.MemoryHostCoreModule = hostCore;
declare const sessionStore: typeof SessionStoreRuntime;
export const s: Mine.SessionStoreRuntimeModule = sessionStore;
// what the plugin registers (its runtime, its managers) is what OpenClaw takes
declare const cap: Mine.MemoryPluginCapability;
export const m: MemoryPluginCapability = cap;
"""


@pytest.mark.slow  # about 5 s of CPU
def test_the_declared_host_types_are_openclaws(tmp_path: Path) -> None:
    require_openclaw()
    missing = [str(p) for p in (TSC, TYPE_ROOTS / "node/package.json") if not p.exists()]
    assert not missing, f"not installed: {missing}; run bash scripts/setup_openclaw.sh"
    (tmp_path / "node_modules").mkdir()
    (tmp_path / "node_modules" / "openclaw").symlink_to(OPENCLAW.parent)
    types = (PLUGIN / "types" / "host.js").as_posix()
    (tmp_path / "conformance.ts").write_text(CONFORMANCE.replace("@TYPES@", types))
    options = {
        "noEmit": True,
        "module": "nodenext",
        "moduleResolution": "nodenext",
        "target": "es2023",
        "strict": True,
        "skipLibCheck": True,  # OpenClaw's own declarations are not under test
        "types": ["node"],
        "typeRoots": [str(TYPE_ROOTS)],
    }
    tsconfig = {"compilerOptions": options, "files": ["conformance.ts"]}
    (tmp_path / "tsconfig.json").write_text(json.dumps(tsconfig))
    r = subprocess.run(
        [str(NODE), str(TSC), "-p", str(tmp_path)], capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, r.stdout[-8000:] + r.stderr[-2000:]


# What reaches into the host: a module specifier that is neither Node's (node:...) nor
# a file of the plugin's own, a computed one, or resolving and loading host files.
SPECIFIER = re.compile(
    r"""(?:^|[\s}*])from\s*["']([^"'\n]+)["']"""  # import ... from "x", export ... from "x"
    r"|\bimport\s*\(\s*([^)]*?)\s*\)",  # import(x)
    re.M,
)
REACHING = {
    "import.meta.resolve": re.compile(r"\bimport\.meta\.resolve\b"),
    "createRequire": re.compile(r"\bcreateRequire\b"),
    "require": re.compile(r"\brequire\s*(?:\.\s*resolve\s*)?\("),
    "the host's entry point (process.argv)": re.compile(r"\bprocess\.argv\b"),
    "a data: module": re.compile(r"data:text/javascript"),
    "an OpenClaw specifier": re.compile(r"""["'`]openclaw/"""),
    "a hashed OpenClaw file": re.compile(r"-[A-Za-z0-9_]{8}\.mjs\b"),
}


def shipped_sources() -> list[str]:
    """The plugin's JavaScript as package.json ships it ("files"), plugin-relative."""
    files = json.loads((PLUGIN / "package.json").read_text(encoding="utf-8"))["files"]
    out: set[str] = set()
    for entry in files:
        p = PLUGIN / entry
        found = [p] if p.is_file() else sorted(p.rglob("*")) if p.is_dir() else []
        out.update(str(f.relative_to(PLUGIN)) for f in found if f.suffix in (".js", ".mjs"))
    return sorted(out)


def reaches(rel: str, text: str | None = None) -> list[str]:
    """How the plugin file ``rel`` (or ``text`` as that file) reaches into the host."""
    if text is None:
        text = (PLUGIN / rel).read_text(encoding="utf-8")
    found = [what for what, pattern in REACHING.items() if pattern.search(text)]
    for m in SPECIFIER.finditer(text):
        static, dynamic = m.group(1), m.group(2)
        literal = re.fullmatch(r"""(["'])([^"'`$]*)\1""", dynamic) if dynamic is not None else None
        name = static if static is not None else literal.group(2) if literal else None
        if name is None:
            found.append(f"import({dynamic})")
        elif not name.startswith("node:") and not own_file(rel, name):
            found.append(f"imports {name}")
    return found


def own_file(rel: str, specifier: str) -> bool:
    if not specifier.startswith(("./", "../")):
        return False
    target = ((PLUGIN / rel).parent / specifier).resolve()
    return target.is_relative_to(PLUGIN.resolve())


def test_only_the_host_module_reaches_into_openclaw() -> None:
    sources = shipped_sources()
    assert HOST in sources and "index.js" in sources, sources
    elsewhere = {rel: how for rel in sources if rel != HOST and (how := reaches(rel))}
    assert elsewhere == {}, "only src/host.js may load OpenClaw's modules"
    # the check sees what host.js does (were it renamed or rewritten, this would say so)
    assert {"import.meta.resolve", "createRequire", "a data: module"} <= set(reaches(HOST))
    assert "export const TESTED" in (PLUGIN / HOST).read_text(encoding="utf-8")


def test_the_check_sees_each_way_in() -> None:
    """``reaches`` on lines that each load something of the host's."""
    lines = {
        'import x from "openclaw/plugin-sdk/core";': "imports openclaw/plugin-sdk/core",
        'const m = await import("openclaw/plugin-sdk/core");': "imports openclaw/plugin-sdk/core",
        "const m = await import(specifier);": "import(specifier)",
        'import y from "../../../openclaw/dist/x.js";': "imports ../../../openclaw/dist/x.js",
        'export { z } from "some-package";': "imports some-package",
        'const r = import.meta.resolve("x");': "import.meta.resolve",
        'const f = "dreaming-state-GgIReYWB.mjs";': "a hashed OpenClaw file",
    }
    for line, expected in lines.items():
        assert expected in reaches("src/tools.js", line), line
    fine = 'import fs from "node:fs";\nimport { a } from "./agents.js";\n'
    assert reaches("src/tools.js", fine + 'await import("node:sqlite");') == []
