#!/usr/bin/env bash
# The demo: real jobs on the built-in local executor, then a short workflow on a
# simulated 64-node cluster (the embedded Batsim-compatible simulator). Sets up its
# own virtual environment (.venv) on first run; needs only python3 >= 3.10.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/_venv.sh gantt,batsim
"$PY" scripts/demo_local.py
if [ -f scripts/demo_batsim.py ]; then
  "$PY" scripts/demo_batsim.py
fi
