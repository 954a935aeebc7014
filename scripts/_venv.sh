# Sourced by demo.sh and test.sh: make .venv with hpcjobs installed (idempotent).
# Usage: . scripts/_venv.sh [extras]   e.g. ". scripts/_venv.sh test,gantt,batsim"
extras=${1:-}
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip
fi
spec=.
[ -n "$extras" ] && spec=".[${extras}]"
# pip prints a line per satisfied requirement with -v; -q keeps a fresh install quiet
.venv/bin/python -m pip install -q -e "$spec" 2>&1 | grep -v -e '^WARNING: Location' -e '^$' || true
PY=.venv/bin/python
