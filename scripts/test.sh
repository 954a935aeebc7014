#!/usr/bin/env bash
# The test command: sets up everything the tests need on a fresh Debian machine (the
# package and its test dependencies in .venv, OpenMPI, a real single-node Slurm with
# accounting, and the real Batsim, Flux and OpenPBS where their builds are at hand:
# scripts/real-systems.sh), checks types (mypy --strict) and runs the whole test suite with pytest.
# Extra arguments go to one pytest run (e.g. scripts/test.sh tests/core -x); without any,
# the suite runs as groups side by side (scripts/pytest_groups.py).
# Under CI=true a test that needs Slurm or MPI fails instead of skipping.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/_venv.sh test,gantt,batsim,docs

if [ "$(id -u)" = 0 ]; then
  bash scripts/install-test-deps.sh
  bash scripts/slurm-cluster.sh up
  bash scripts/slurm-cluster.sh clear  # a killed earlier run's jobs would run first
  . scripts/real-systems.sh
  # every job a killed earlier run left with the PBS server (it keeps them across restarts)
  pbs_clear() {
    local ids
    ids=$(/opt/pbs/bin/qselect)
    [ -z "$ids" ] || { echo "test.sh: deleting $(wc -w <<<"$ids") PBS job(s) left queued"; /opt/pbs/bin/qdel -W force $ids; }
  }
  # one line per real system: real_system NAME [ARGS] && export what the tests need
  real_system batsim && export PATH=/opt/batsim-4.2.1/bin:$PATH
  real_system pbs up && export PBS_CONF_FILE=/etc/pbs.conf HPCJOBS_PBS_RESTART="bash $REAL_TOOLS/real-pbs.sh up" && /opt/pbs/bin/qmgr -c "set node $(hostname -s) resources_available.ncpus=16" && pbs_clear  # 16 cpus, like the Slurm node (docs/pbs.md)
  real_system flux && export PATH=/opt/flux-core-0.88/bin:$PATH PYTHONPATH=/opt/flux-core-0.88/lib/python3.11/site-packages${PYTHONPATH:+:$PYTHONPATH}
  # an OpenSSH server on a loopback port standing for a login node (tests/remote)
  if sshd_env=$(bash scripts/sshd.sh up); then eval "$sshd_env"; else
    echo "test.sh: no test sshd: the remote tests will skip (and fail under CI=true)" >&2; fi
else
  echo "test.sh: not root: cannot install OpenMPI, start Slurm or an sshd; those tests will skip" >&2
fi
# a private Redis (Unix socket, no TCP port) for the legacy Batsim protocol's job data
if command -v redis-server >/dev/null; then eval "$(bash scripts/redis.sh up)"; fi

echo "== mypy --strict"
.venv/bin/mypy
if [ $# -gt 0 ]; then
  echo "== pytest"
  exec .venv/bin/python -m pytest -ra "$@"
fi
# the whole suite: the Slurm, PBS and other tests side by side (scripts/pytest_groups.py)
exec .venv/bin/python scripts/pytest_groups.py .venv/bin/python
