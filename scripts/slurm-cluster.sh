#!/usr/bin/env bash
# slurm-cluster.sh - a real single-node Slurm cluster for hpcjobs' tests, CI and benchmarks.
#
#   scripts/slurm-cluster.sh up       install (Debian packages), configure, start, wait idle
#   scripts/slurm-cluster.sh status   exit 0 if the cluster accepts jobs (prints a summary)
#   scripts/slurm-cluster.sh down     stop the daemons that `up` started, and nothing else
#   scripts/slurm-cluster.sh clear    cancel every job in the queue (scripts/test.sh, first:
#                                     jobs that a killed run left in slurmctld's saved state
#                                     would otherwise take the node's CPUs from the tests)
#
# No systemd: the daemons (munged, mariadbd, slurmdbd, slurmctld, slurmd) are started by
# hand. `up` is idempotent and takes ~0.2 s when everything already runs with the current
# configuration. Must run as root; jobs are submitted as root (SlurmUser=root).
# Concurrent `up`/`down` calls are serialised with flock.
#
# Knobs (environment):
#   HPCJOBS_SLURM_MINJOBAGE=20   seconds a finished job stays in squeue/scontrol (Slurm's
#                                MinJobAge; short so "job purged from the queue" is testable)
#   HPCJOBS_SLURM_CPUS=16        CPUs the node advertises (config_overrides), so that many
#                                1-CPU jobs run at once on a 2-core machine
#   HPCJOBS_SLURM_ACCOUNTING=1   MariaDB + slurmdbd so that `sacct` works; 0 = accounting
#                                disabled (sacct fails, as on sites without slurmdbd)
#   HPCJOBS_SLURM_CGROUP=auto    auto|1|0: cgroup memory enforcement (real OUT_OF_MEMORY);
#                                auto = on when the cgroup v1 memory controller is mounted
#   HPCJOBS_SLURM_TIMEOUT=120    seconds to wait for the node to become idle
set -euo pipefail

RUN_DIR=/run/hpcjobs-slurm            # pid files, lock, "<daemon>.ours" = started by us
SPOOL=/var/spool/hpcjobs-slurm        # StateSaveLocation, SlurmdSpoolDir
LOG_DIR=/var/log/hpcjobs-slurm
CONF_DIR=/etc/slurm                   # where every Slurm command looks by default
CLUSTER=hpcjobs
DB_NAME=hpcjobs_slurm_acct
DB_USER=slurm
DB_PASS=hpcjobs-test-only             # local test database, reachable only on localhost

MINJOBAGE=${HPCJOBS_SLURM_MINJOBAGE:-20}
CPUS=${HPCJOBS_SLURM_CPUS:-16}
ACCOUNTING=${HPCJOBS_SLURM_ACCOUNTING:-1}
CGROUP=${HPCJOBS_SLURM_CGROUP:-auto}
TIMEOUT=${HPCJOBS_SLURM_TIMEOUT:-120}

say() { echo "slurm-cluster: $*"; }
die() { echo "slurm-cluster: $*" >&2; exit 1; }

# pid_of NAME PIDFILE: print the pid in PIDFILE if that process is alive and named NAME
pid_of() {
  local pid
  [ -s "$2" ] || return 1
  pid=$(tr -dc '0-9' <"$2")
  [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$1" ] || return 1
  echo "$pid"
}
# retry TENTHS CMD...: run CMD every 0.1 s until it succeeds or TENTHS tries are used up
retry() {
  local n=$1; shift
  for _ in $(seq "$n"); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
  return 1
}
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
munge_ok() { munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; }
node_state() { sinfo -h -N -o '%t' 2>/dev/null | head -1 || true; }
# a node that takes jobs: "plnd" (and a "-" suffix) is a node the backfill scheduler has
# planned for a pending job, as when a whole-node job (a pilot) holds it
serving() { case "${1%-}" in idle|mix|alloc|comp|plnd) return 0 ;; *) return 1 ;; esac; }
# a daemon we started and that is still alive (its pid file is the daemon's own)
ours_alive() { [ -f "$RUN_DIR/$1.ours" ] && pid_of "$1" "$2" >/dev/null; }

# ------------------------------------------------------------------------------ packages
install_packages() {
  local pkgs=(munge slurmctld slurmd slurm-client) missing=() p
  [ "$ACCOUNTING" = 1 ] && pkgs+=(mariadb-server slurmdbd)
  for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  say "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # no recommends: they would pull in a mail server and systemd helpers we do not use
  if ! apt-get install -y -q --no-install-recommends "${missing[@]}" >"$LOG_DIR/apt.log" 2>&1; then
    say "apt-get install failed; apt-get update and retry"
    apt-get update -q >>"$LOG_DIR/apt.log" 2>&1 || true
    apt-get install -y -q --no-install-recommends "${missing[@]}" >>"$LOG_DIR/apt.log" 2>&1 \
      || { tail -20 "$LOG_DIR/apt.log" >&2; die "package installation failed (log: $LOG_DIR/apt.log)"; }
  fi
}

# ------------------------------------------------------------------------------ munge
start_munge() {
  install -d -o munge -g munge -m 0755 /run/munge
  install -d -o munge -g munge -m 0700 /etc/munge /var/lib/munge /var/log/munge
  [ -s /etc/munge/munge.key ] || mungekey --create --keyfile=/etc/munge/munge.key
  chown munge:munge /etc/munge/munge.key && chmod 0400 /etc/munge/munge.key
  munge_ok && return 0
  say "starting munged"
  runuser -u munge -- /usr/sbin/munged 9>&- --pid-file=/run/munge/munged.pid
  retry 50 munge_ok || die "munged did not start"
  touch "$RUN_DIR/munged.ours"
}

# ------------------------------------------------------------------------------ accounting
start_accounting() {
  install -d -o mysql -g mysql -m 0755 /run/mysqld
  if ! mariadb-admin ping >/dev/null 2>&1; then
    say "starting mariadbd"
    setsid -f /usr/sbin/mariadbd --user=mysql --bind-address=127.0.0.1 \
      >>"$LOG_DIR/mariadb.log" 2>&1 </dev/null 9>&-
    retry 300 mariadb-admin ping || { tail -20 "$LOG_DIR/mariadb.log" >&2; die "mariadbd did not start"; }
    touch "$RUN_DIR/mariadbd.ours"
  fi
  mariadb -e "CREATE DATABASE IF NOT EXISTS $DB_NAME;
    CREATE USER IF NOT EXISTS '$DB_USER'@'localhost' IDENTIFIED BY '$DB_PASS';
    GRANT ALL ON $DB_NAME.* TO '$DB_USER'@'localhost';"
  write_if_changed "$CONF_DIR/slurmdbd.conf" 0600 <<EOF
# Written by hpcjobs scripts/slurm-cluster.sh
AuthType=auth/munge
DbdHost=localhost
DbdPort=6819
SlurmUser=root
PidFile=$RUN_DIR/slurmdbd.pid
LogFile=$LOG_DIR/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageUser=$DB_USER
StoragePass=$DB_PASS
StorageLoc=$DB_NAME
EOF
  if ((CHANGED)) && ours_alive slurmdbd "$RUN_DIR/slurmdbd.pid"; then stop slurmdbd "$RUN_DIR/slurmdbd.pid"; fi
  if ! pid_of slurmdbd "$RUN_DIR/slurmdbd.pid" >/dev/null; then
    say "starting slurmdbd"
    /usr/sbin/slurmdbd 9>&-
    retry 300 port_open 6819 || { tail -20 "$LOG_DIR/slurmdbd.log" >&2; die "slurmdbd did not start"; }
    touch "$RUN_DIR/slurmdbd.ours"
  fi
  if ! sacctmgr -n -P list cluster format=cluster 2>/dev/null | grep -qx "$CLUSTER"; then
    sacctmgr -i add cluster "$CLUSTER" >/dev/null
  fi
}

# write_if_changed FILE MODE <content: sets CHANGED=1 when FILE's content changed
CHANGED=0
write_if_changed() {
  local new
  new=$(cat)
  CHANGED=0
  if [ ! -f "$1" ] || [ "$(cat "$1")" != "$new" ]; then
    printf '%s\n' "$new" >"$1"
    CHANGED=1
  fi
  chmod "$2" "$1"
}

# ------------------------------------------------------------------------------ slurm.conf
cgroup_wanted() {
  case "$CGROUP" in
    1) return 0 ;;
    0) return 1 ;;
    # Slurm 22.05's cgroup/v1 plugin needs the v1 memory controller mounted here
    *) mountpoint -q /sys/fs/cgroup/memory 2>/dev/null && mountpoint -q /sys/fs/cgroup/freezer 2>/dev/null ;;
  esac
}

CONF_CHANGED=0   # set by write_slurm_conf: slurm.conf or cgroup.conf changed
write_slurm_conf() {
  local host mem track acct
  host=$(hostname -s)
  # `slurmd -C` prints the real hardware; we keep its memory and advertise $CPUS CPUs
  mem=$(slurmd -C | sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p')
  if cgroup_wanted; then
    track="ProctrackType=proctrack/cgroup
TaskPlugin=task/cgroup
# memory is a consumable resource, so --mem is enforced (OUT_OF_MEMORY state)
SelectTypeParameters=CR_CPU_Memory
DefMemPerCPU=256"
    write_if_changed "$CONF_DIR/cgroup.conf" 0644 <<EOF
# Written by hpcjobs scripts/slurm-cluster.sh
CgroupPlugin=cgroup/v1
ConstrainRAMSpace=yes
ConstrainSwapSpace=no
ConstrainCores=no
EOF
    CONF_CHANGED=$CHANGED
  else
    track="ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectTypeParameters=CR_CPU"
  fi
  if [ "$ACCOUNTING" = 1 ]; then
    acct="AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
JobAcctGatherType=jobacct_gather/linux"
  else
    acct="AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none"
  fi
  write_if_changed "$CONF_DIR/slurm.conf" 0644 <<EOF
# Written by hpcjobs scripts/slurm-cluster.sh: single-node test cluster, no systemd.
ClusterName=$CLUSTER
# 127.0.0.1 so that nothing depends on the host name resolving
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
SwitchType=switch/none
SelectType=select/cons_tres
$track
$acct
SchedulerType=sched/backfill
# the default batch_sched_delay=3 starts queued batch jobs only every few seconds
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
# impossible requests fail at sbatch time instead of pending forever
EnforcePartLimits=ALL
# how long finished jobs stay visible to squeue/scontrol (hpcjobs reads it back)
MinJobAge=$MINJOBAGE
KillWait=5
OverTimeLimit=0
InactiveLimit=0
ReturnToService=2
MailProg=/bin/true
MaxJobCount=100000
# advertise CPUs=$CPUS on a machine with fewer real cores
SlurmdParameters=config_overrides
SlurmctldPort=6817
SlurmdPort=6818
SlurmctldPidFile=$RUN_DIR/slurmctld.pid
SlurmdPidFile=$RUN_DIR/slurmd.pid
StateSaveLocation=$SPOOL/ctld
SlurmdSpoolDir=$SPOOL/d
SlurmctldLogFile=$LOG_DIR/slurmctld.log
SlurmdLogFile=$LOG_DIR/slurmd.log
NodeName=$host NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
  ((CHANGED)) && CONF_CHANGED=1
  return 0
}

# ------------------------------------------------------------------------------ daemons
# stop NAME PIDFILE: stop a daemon we started (by pid), wait for it to exit
stop() {
  local pid
  pid=$(pid_of "$1" "$2") || { rm -f "$RUN_DIR/$1.ours"; return 0; }
  say "stopping $1 ($pid)"
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 150); do [ -d "/proc/$pid" ] || break; sleep 0.1; done
  if [ -d "/proc/$pid" ]; then say "$1 ignored SIGTERM for 15 s: SIGKILL"; kill -KILL "$pid" 2>/dev/null || true; fi
  rm -f "$RUN_DIR/$1.ours"
}

start_slurm() {
  local conf_changed=$1 name
  for name in slurmd slurmctld; do
    if ((conf_changed)) && ours_alive "$name" "$RUN_DIR/$name.pid"; then stop "$name" "$RUN_DIR/$name.pid"; fi
  done
  if pid_of slurmctld "$RUN_DIR/slurmctld.pid" >/dev/null; then
    ((conf_changed)) && [ ! -f "$RUN_DIR/slurmctld.ours" ] && { scontrol reconfigure || true; }
  else
    say "starting slurmctld"
    /usr/sbin/slurmctld 9>&-
    retry 100 pid_of slurmctld "$RUN_DIR/slurmctld.pid" \
      || { tail -20 "$LOG_DIR/slurmctld.log" >&2; die "slurmctld did not start"; }
    touch "$RUN_DIR/slurmctld.ours"
  fi
  if ! pid_of slurmd "$RUN_DIR/slurmd.pid" >/dev/null; then
    say "starting slurmd"
    /usr/sbin/slurmd 9>&-
    retry 100 pid_of slurmd "$RUN_DIR/slurmd.pid" \
      || { tail -20 "$LOG_DIR/slurmd.log" >&2; die "slurmd did not start"; }
    touch "$RUN_DIR/slurmd.ours"
  fi
}

wait_idle() {
  local state="" i
  for ((i = 0; i < TIMEOUT * 5; i++)); do
    state=$(node_state)
    serving "$state" && return 0
    case "$state" in
      # a node that was down when slurmctld restarted stays down until resumed
      down*|drain*|drng*) scontrol update nodename="$(hostname -s)" state=resume >/dev/null 2>&1 || true ;;
    esac
    sleep 0.2
  done
  sinfo >&2 || true
  tail -20 "$LOG_DIR/slurmctld.log" "$LOG_DIR/slurmd.log" >&2 || true
  die "node not ready after ${TIMEOUT}s (state '$state')"
}

# ------------------------------------------------------------------------------ commands
cmd_up() {
  local t0=$SECONDS name pid
  # one Slurm per machine (fixed ports, /etc/slurm): never fight another setup's daemons
  for name in slurmctld slurmd; do
    if ! pid_of "$name" "$RUN_DIR/$name.pid" >/dev/null && pid=$(pgrep -xo "$name"); then
      die "a $name not started by this script is running (pid $pid); stop it first"
    fi
  done
  install_packages
  start_munge
  # slurm.conf first: sacctmgr (cluster registration) reads it
  write_slurm_conf
  [ "$ACCOUNTING" = 1 ] && start_accounting
  start_slurm "$CONF_CHANGED"
  wait_idle
  say "up in $((SECONDS - t0)) s: node $(node_state), MinJobAge=$MINJOBAGE, accounting=$ACCOUNTING, cgroup=$(cgroup_wanted && echo 1 || echo 0)"
}

cmd_status() {
  local ok=0 name pidfile
  for name in munged slurmdbd slurmctld slurmd; do
    case $name in
      munged) pidfile=/run/munge/munged.pid ;;
      *) pidfile=$RUN_DIR/$name.pid ;;
    esac
    if pid=$(pid_of "$name" "$pidfile"); then
      echo "$name: running (pid $pid$([ -f "$RUN_DIR/$name.ours" ] && echo ", started by slurm-cluster.sh"))"
    elif pid=$(pgrep -xo "$name"); then
      echo "$name: running (pid $pid, not started by slurm-cluster.sh)"
    else
      echo "$name: not running"
      [ "$name" = slurmdbd ] || ok=1
    fi
  done
  local state
  state=$(node_state)
  echo "node: ${state:-unknown}"
  serving "$state" || ok=1
  return $ok
}

cmd_clear() {
  local ids
  # %F: an array's own id, so one scancel ends all its tasks
  ids=$(squeue -h -o %F | sort -u)
  [ -n "$ids" ] || return 0
  say "cancelling $(wc -w <<<"$ids") job(s) left in the queue"
  # shellcheck disable=SC2086 # one id a word
  scancel $ids
}

cmd_down() {
  local ids
  # cancel what is left so that no job processes outlive slurmd
  if [ -f "$RUN_DIR/slurmctld.ours" ] && ids=$(squeue -h -o %A 2>/dev/null) && [ -n "$ids" ]; then
    say "cancelling $(wc -w <<<"$ids") job(s)"
    # shellcheck disable=SC2086  # one id per word
    scancel $ids 2>/dev/null || true
    for _ in $(seq 50); do [ -z "$(squeue -h -o %A 2>/dev/null)" ] && break; sleep 0.2; done
  fi
  ours_alive slurmd "$RUN_DIR/slurmd.pid" && stop slurmd "$RUN_DIR/slurmd.pid"
  ours_alive slurmctld "$RUN_DIR/slurmctld.pid" && stop slurmctld "$RUN_DIR/slurmctld.pid"
  ours_alive slurmdbd "$RUN_DIR/slurmdbd.pid" && stop slurmdbd "$RUN_DIR/slurmdbd.pid"
  ours_alive mariadbd /run/mysqld/mysqld.pid && stop mariadbd /run/mysqld/mysqld.pid
  ours_alive munged /run/munge/munged.pid && stop munged /run/munge/munged.pid
  rm -f "$RUN_DIR"/*.ours
  say "down"
}

case "${1:-}" in
  up|down|status|clear) ;;
  *) echo "usage: $0 up|down|status|clear" >&2; exit 2 ;;
esac
[ "$1" = status ] && { cmd_status; exit; }
[ "$(id -u)" = 0 ] || die "must run as root"
mkdir -p "$RUN_DIR" "$SPOOL/ctld" "$SPOOL/d" "$LOG_DIR" "$CONF_DIR"
# the daemons are started with fd 9 closed (9>&-) so that they do not hold this lock
exec 9>"$RUN_DIR/lock"
flock 9
"cmd_$1"
