# Sourced by demo.sh and test.sh: make ./.venv hold memindex with the extras "$1".
# pip runs only when pyproject.toml (or the extras) changed since the last install,
# so a second run starts at once; when it runs, its progress shows (the first
# install with the "local" extra builds llama-cpp-python from source: ~20 minutes
# on 2 idle cores, over 30 on a busy machine; then pip caches the wheel).
# Whether the extras of a stamp ("-dev,local", or "" for none) hold every one of "$2".
_extras_cover() {
  local have=",${1#-}," e
  local IFS=,
  for e in $2; do
    [[ "$have" == *",$e,"* ]] || return 1
  done
  return 0
}

setup_venv() {
  local extras="$1" py=${PYTHON:-python3}
  "$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
    || { echo "memindex needs Python >= 3.11 (set PYTHON=/path/to/python3.11)" >&2; return 1; }
  [ -x .venv/bin/python ] || "$py" -m venv .venv
  local stamp=".venv/.memindex-installed${extras:+-$extras}"
  local want f
  want="$(.venv/bin/python -c 'import hashlib,sys; print(hashlib.sha256(open("pyproject.toml","rb").read()).hexdigest())')"
  # up to date: installed from this pyproject.toml with these extras or more (the
  # test suite's install serves the demo too)
  for f in .venv/.memindex-installed*; do
    [ -f "$f" ] && [ -x .venv/bin/memindex ] && [ "$(cat "$f")" = "$want" ] || continue
    if _extras_cover "${f#.venv/.memindex-installed}" "$extras"; then
      echo "== setup: .venv is up to date (pyproject.toml unchanged)"
      return 0
    fi
  done
  echo "== setup: installing memindex${extras:+[$extras]} into .venv"
  case "$extras" in *local*)
    echo "   (the first time, llama-cpp-python compiles from source: 20-30+ minutes on 2 cores; pip prints 'still running...' meanwhile)";;
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
