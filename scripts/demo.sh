#!/usr/bin/env bash
# Set up memindex in ./.venv and run the main job: index a workspace and search it.
# Workspace: $MEMINDEX_WORKSPACE, else ~/.openclaw/workspace if present, else the
# example workspace shipped in examples/workspace. No keys, no network beyond PyPI.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup_venv.sh
setup_venv ""

WS=${MEMINDEX_WORKSPACE:-}
if [ -z "$WS" ]; then
  if [ -d "$HOME/.openclaw/workspace" ]; then WS="$HOME/.openclaw/workspace"; else WS=examples/workspace; fi
fi
QUERY=${1:-which machine is the gateway}

echo "== memindex index  (workspace: $WS)"
.venv/bin/memindex --workspace "$WS" index
echo
echo "== memindex search \"$QUERY\""
.venv/bin/memindex --workspace "$WS" search "$QUERY"
echo "== memindex status"
.venv/bin/memindex --workspace "$WS" status
