#!/usr/bin/env bash
# real-systems.sh - install the prebuilt real Batsim, Flux and OpenPBS the tests run against.
#
# Sourced by scripts/test.sh. These systems are in no package registry; the project's
# maintainers keep prebuilt builds with install scripts in a `shared/` folder beside the
# checkout (always there in CI). When it is absent (a user's clone), nothing is installed
# and the tests that need one of these systems skip (they fail under CI=true).
# Each install is idempotent (~1 s once its Debian packages are there); what it needs
# on PATH (or elsewhere) is exported for the tests, the way a user would point hpcjobs at it.
#
#   real_system NAME [ARGS...]   run shared/tools/real-NAME.sh ARGS; 0 if it is installed
REAL_TOOLS=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/shared/tools
REAL_LOG=${TMPDIR:-/tmp}/hpcjobs-real-systems.log

real_system() {
  local name=$1; shift
  local tool="$REAL_TOOLS/real-$name.sh"
  [ -x "$tool" ] || { echo "real-systems: no $tool: tests needing $name will skip" >&2; return 1; }
  if ! bash "$tool" "$@" >>"$REAL_LOG" 2>&1; then
    tail -20 "$REAL_LOG" >&2
    echo "real-systems: $tool failed (log: $REAL_LOG)" >&2
    return 1
  fi
  echo "real-systems: $name ready"
}
