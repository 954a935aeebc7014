#!/usr/bin/env bash
# install-test-deps.sh - the Debian packages hpcjobs' tests need besides Slurm
# (Slurm itself: scripts/slurm-cluster.sh up).
#
# Idempotent and quiet: prints one line; ~50 ms when everything is already installed.
# Must run as root (Debian's apt-get).
#
# OpenMPI's launcher must be the `mpirun` on PATH: Debian's slurm-wlm-torque registers
# mpiexec.slurm as an alternative for /usr/bin/mpirun (and may win on priority), which
# cannot run OpenMPI programs outside an allocation; we pin the alternative to OpenMPI's.
set -euo pipefail

# libopenmpi-dev: mpicc and mpi.h, to build the MPI program the Flux tests run;
# flatbuffers-compiler: flatc, to check the generated batprotocol code against its schema;
# redis-server: the legacy Batsim protocol keeps its job data in Redis;
# slurm-wlm-torque: Slurm's Torque-style qsub/qstat/qdel, which tests/torque drives
PKGS=(openmpi-bin libopenmpi-dev flatbuffers-compiler redis-server slurm-wlm-torque)
LOG=${TMPDIR:-/tmp}/hpcjobs-install-test-deps.log

[ "$(id -u)" = 0 ] || { echo "install-test-deps: must run as root" >&2; exit 1; }

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  export DEBIAN_FRONTEND=noninteractive
  # apt's lists may be missing or stale on a fresh machine: update once on failure
  if ! apt-get install -y -q --no-install-recommends "${missing[@]}" >"$LOG" 2>&1; then
    apt-get update -q >>"$LOG" 2>&1 || true
    apt-get install -y -q --no-install-recommends "${missing[@]}" >>"$LOG" 2>&1 \
      || { tail -20 "$LOG" >&2; echo "install-test-deps: apt-get failed (log: $LOG)" >&2; exit 1; }
  fi
fi

openmpi=/usr/bin/mpirun.openmpi
[ -x "$openmpi" ] || { echo "install-test-deps: $openmpi missing after installing openmpi-bin" >&2; exit 1; }
if [ "$(readlink -f /usr/bin/mpirun)" != "$(readlink -f "$openmpi")" ]; then
  update-alternatives --quiet --set mpirun "$openmpi"
fi
echo "install-test-deps: ok (installed: ${missing[*]:-nothing new}; mpirun -> $(readlink -f /usr/bin/mpirun))"
