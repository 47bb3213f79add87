# Sourced by demo.sh and test.sh: make ./.venv hold memindex with the extras "$1".
# pip runs only when pyproject.toml (or the extras) changed since the last install,
# so a second run starts at once; when it runs, its progress shows (the first
# install with the "local" extra builds llama-cpp-python from source: ~20 minutes
# on 2 cores, then pip caches the wheel).
setup_venv() {
  local extras="$1" py=${PYTHON:-python3}
  "$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
    || { echo "memindex needs Python >= 3.11 (set PYTHON=/path/to/python3.11)" >&2; return 1; }
  [ -x .venv/bin/python ] || "$py" -m venv .venv
  local stamp=".venv/.memindex-installed${extras:+-$extras}"
  local want
  want="$(.venv/bin/python -c 'import hashlib,sys; print(hashlib.sha256(open("pyproject.toml","rb").read()).hexdigest())')"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x .venv/bin/memindex ]; then
    echo "== setup: .venv is up to date (pyproject.toml unchanged)"
    return 0
  fi
  echo "== setup: installing memindex${extras:+[$extras]} into .venv"
  case "$extras" in *local*)
    echo "   (the first time, llama-cpp-python compiles from source: ~20 minutes; pip prints 'still running...' meanwhile)";;
  esac
  .venv/bin/python -m pip install --quiet --upgrade pip
  # pipefail (set by the callers): the pipeline fails when pip does.
  if ! .venv/bin/python -m pip install --progress-bar off -e ".${extras:+[$extras]}" 2>&1 \
    | { grep --line-buffered -E '^(Collecting|Successfully|  Building wheel|ERROR|error)' || true; }
  then
    echo "setup failed: pip could not install memindex${extras:+[$extras]} (output above)" >&2
    return 1
  fi
  echo "$want" > "$stamp"
}
