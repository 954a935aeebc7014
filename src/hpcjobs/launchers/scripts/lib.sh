# lib.sh: what every hpcjobs launcher script shares. Sourced (never run) by single.sh,
# multiple.sh and mpirun.sh as their first step, called as
#
#   /bin/sh <launcher>.sh <pre_launch|""> <post_launch|""> <process_count> \
#           <processes_per_node> -- <executable> <arguments...>
#
# It checks and consumes the launcher's own arguments, leaving the job's command in "$@",
# writes the node file (PSIJ_NODEFILE), and provides the steps a launcher strings
# together: _hj_pre_launch, _hj_start (once per process it starts), _hj_wait_all,
# _hj_post_launch_and_exit. See docs/launchers.md for the behaviour these implement.
#
# POSIX sh only (Debian's /bin/sh is dash), and the same under bash. Every expansion is
# quoted: the job's arguments are never split, globbed or re-parsed. All names start
# with _hj_ because the pre- and post-launch scripts are sourced into this very shell.

# Pre- and post-launch scripts are written for bash: psij-python sources them with bash,
# and what HPC users put there needs it (module/Lmod init scripts, `export -f`,
# `[[ ]]`, `source`). So when one is given and bash exists, the launcher re-runs itself
# under bash, from the top; without one it stays in the lighter /bin/sh.
if [ -z "${BASH_VERSION-}" ] && { [ -n "${1-}" ] || [ -n "${2-}" ]; } &&
    command -v bash >/dev/null 2>&1; then
    exec bash "$0" "$@"
fi

_hj_me=${0##*/}
_hj_phase=setup     # setup -> pre -> ranks -> post -> done; read by the traps
_hj_status=0        # the job's exit code (first non-zero among the ranks, lowest rank first)
_hj_pids=           # the started processes, in rank order
_hj_caught=         # name of a termination signal received, if any
_hj_tmp_nodefile=   # node file to remove at exit (only when we made a temporary one)

_hj_say() {
    printf '%s: %s\n' "$_hj_me" "$1" >&2
}

_hj_die() {  # <status> <message>
    _hj_say "$2"
    exit "$1"
}

_hj_is_count() {  # a positive decimal integer without leading zeros
    case $1 in
        '' | *[!0-9]* | 0*) return 1 ;;
    esac
    return 0
}

_hj_usage="usage: $0 <pre_launch|\"\"> <post_launch|\"\"> <process_count> <processes_per_node> -- <executable> [arguments...]"
if [ "$#" -lt 6 ] || [ "$5" != "--" ]; then
    _hj_die 2 "$_hj_usage"
fi
_hj_pre=$1
_hj_post=$2
_hj_n=$3
_hj_ppn=$4
shift 5
_hj_is_count "$_hj_n" || _hj_die 2 "process_count must be a positive integer, got '$_hj_n'"
_hj_is_count "$_hj_ppn" || _hj_die 2 "processes_per_node must be a positive integer, got '$_hj_ppn'"

# Background processes of a non-interactive shell get /dev/null as stdin (POSIX, "Asynchronous
# Lists"), so keep the launcher's stdin on fd 9 for the process that should read it.
if (true <&0) 2>/dev/null; then
    exec 9<&0
else
    exec 9</dev/null
fi

_hj_on_exit() {  # <exit status>; settles the final status and removes what we made
    _hj_exit=$1
    trap - EXIT
    case $_hj_phase in
        pre)
            if [ "$_hj_exit" -ne 0 ]; then
                _hj_say "pre-launch script '$_hj_pre' failed with status $_hj_exit; the job's processes were not started"
            else
                _hj_say "pre-launch script '$_hj_pre' called exit 0; the job's processes were not started"
            fi
            ;;
        post)
            # post-launch never hides the job's own failure; it only fails a job that succeeded
            if [ "$_hj_status" -ne 0 ]; then
                [ "$_hj_exit" -eq 0 ] || _hj_say "post-launch script '$_hj_post' failed with status $_hj_exit; keeping the job's exit code $_hj_status"
                _hj_exit=$_hj_status
            elif [ "$_hj_exit" -ne 0 ]; then
                _hj_say "post-launch script '$_hj_post' failed with status $_hj_exit (the job's processes succeeded)"
            fi
            ;;
    esac
    [ -z "$_hj_tmp_nodefile" ] || rm -f "$_hj_tmp_nodefile"
    exit "$_hj_exit"
}
trap '_hj_on_exit "$?"' EXIT

_hj_reraise() {  # end the launcher by the signal it received, so its parent sees that signal
    trap - EXIT HUP INT TERM
    [ -z "$_hj_tmp_nodefile" ] || rm -f "$_hj_tmp_nodefile"
    kill -s "$_hj_caught" "$$"
    exit "$_hj_caught_status"  # only if the signal did not end us at once
}

_hj_on_signal() {  # <name> <number>
    _hj_caught=$1
    _hj_caught_status=$((128 + $2))
    _hj_interrupted=1
    if [ "$_hj_phase" = ranks ]; then
        # Stop the processes, then _hj_wait_all reaps them and re-raises. TERM for all:
        # background processes of a non-interactive shell ignore INT (dash, POSIX).
        for _hj_pid in $_hj_pids; do
            kill -s TERM "$_hj_pid" 2>/dev/null
        done
    else
        _hj_reraise
    fi
}
trap '_hj_on_signal HUP 1' HUP
trap '_hj_on_signal INT 2' INT
trap '_hj_on_signal TERM 15' TERM

_hj_fill() {  # host names on stdin -> one line per process, processes_per_node per host
    awk -v n="$_hj_n" -v ppn="$_hj_ppn" '
        NF && !seen[$1]++ { host[k++] = $1 }
        END {
            if (k == 0) exit 1
            for (i = 0; i < n; i++) print host[int(i / ppn) % k]
        }'
}

_hj_hosts() {  # the allocation's host names, one a line
    if [ -n "${_hj_flux-}" ]; then
        # the nodes of the job's Flux instance, as its resource set (RFC 20 R) names
        # them (executors/flux/ranks.sh sets _hj_flux)
        "$_hj_flux" resource R | "$_hj_flux" R decode --nodelist |
            "$_hj_flux" hostlist --expand --delimiter='\n' -
    elif [ -n "${SLURM_JOB_NODELIST-}" ]; then
        # https://slurm.schedmd.com/scontrol.html ("show hostnames" expands a node list)
        scontrol show hostnames "$SLURM_JOB_NODELIST"
    elif [ -n "${PBS_NODEFILE-}" ]; then
        cat "$PBS_NODEFILE"
    else
        uname -n
    fi
}

_hj_write_nodefile() {
    if [ -n "${HPCJOBS_JOB_DIR-}" ]; then
        PSIJ_NODEFILE=$HPCJOBS_JOB_DIR/nodefile
    else
        PSIJ_NODEFILE=$(mktemp "${TMPDIR:-/tmp}/hpcjobs-nodefile.XXXXXX") ||
            _hj_die 1 "cannot create a temporary node file"
        _hj_tmp_nodefile=$PSIJ_NODEFILE
    fi
    # private like every file hpcjobs makes (the job runs under the user's umask)
    (umask 077 && true >"$PSIJ_NODEFILE") 2>/dev/null ||
        _hj_die 1 "cannot write the node file '$PSIJ_NODEFILE'"
    if ! _hj_hosts | _hj_fill >"$PSIJ_NODEFILE"; then
        _hj_say "cannot list the allocation's hosts; the node file names this host only"
        uname -n | _hj_fill >"$PSIJ_NODEFILE"
    fi
    export PSIJ_NODEFILE
}
_hj_write_nodefile

_hj_source() {  # <script>
    # A function has its own positional parameters, so a script that runs `set --`
    # cannot clobber the job's command; `.` looks names without a '/' up in PATH, so
    # make a relative name explicit.
    case $1 in
        "~/"*) _hj_file=$HOME/${1#"~/"} ;;  # like JobSpec.directory
        */*) _hj_file=$1 ;;
        *) _hj_file=./$1 ;;
    esac
    shift
    . "$_hj_file"
}

_hj_pre_launch() {
    _hj_phase=pre
    if [ -n "$_hj_pre" ]; then
        _hj_source "$_hj_pre"
        _hj_st=$?  # not `|| exit`: that would disable a `set -e` inside the script
        [ "$_hj_st" -eq 0 ] || exit "$_hj_st"  # the EXIT trap says why
        # A script may leave `set -e` behind (the waits below must not end us) or change
        # IFS (the lists of pids and names below are split on blanks).
        set +e
        unset IFS
    fi
    _hj_phase=ranks
}

_hj_start() {  # <stdin|null> <command...>: start one process of the job in the background
    [ -z "$_hj_caught" ] || return 0  # cancelled while starting: start no more
    _hj_in=$1
    shift
    # `exec` runs the program itself, never a shell builtin or function of the same name.
    if [ "$_hj_in" = stdin ]; then
        exec "$@" <&9 9<&- &
    else
        exec "$@" </dev/null 9<&- &
    fi
    _hj_pids="$_hj_pids $!"
}

_hj_wait_all() {  # wait for every process; _hj_status := the lowest rank's non-zero status
    if [ -n "$_hj_caught" ]; then
        # A signal that came while processes were being started may have run its handler
        # between a fork and the `_hj_pids` update: stop every process now, or the wait
        # below would block on one nobody stopped (a wide window on a loaded node).
        for _hj_pid in $_hj_pids; do
            kill -s TERM "$_hj_pid" 2>/dev/null
        done
    fi
    for _hj_pid in $_hj_pids; do
        while :; do
            _hj_interrupted=
            wait "$_hj_pid"
            _hj_st=$?
            # a trapped signal interrupts `wait` (status > 128): wait for the process again
            [ -n "$_hj_interrupted" ] || break
        done
        [ "$_hj_status" -ne 0 ] || _hj_status=$_hj_st
    done
    [ -z "$_hj_caught" ] || _hj_reraise
}

_hj_post_launch_and_exit() {
    _hj_phase=post
    _hj_post_status=0
    if [ -n "$_hj_post" ]; then
        _hj_source "$_hj_post"
        _hj_post_status=$?
    fi
    exit "$_hj_post_status"  # the EXIT trap combines it with the job's status
}
