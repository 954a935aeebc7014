# mpirun.sh: the `mpirun` launcher. Runs `mpirun -n <process_count>` on the job's command,
# choosing the mpirun after pre-launch (which may load an MPI module):
#   - $HPCJOBS_MPIRUN if set, else `mpirun` if it is Open MPI, else `mpirun.openmpi` if it
#     exists (Debian's slurm-wlm-torque can make /usr/bin/mpirun point at mpiexec.slurm),
#     else `mpirun` whatever it is;
#   - Open MPI: --oversubscribe, --allow-run-as-root when root, -x for every environment
#     variable pre-launch set or changed (reaches ranks on other nodes too), and the node
#     file as --hostfile inside an allocation (Slurm or PBS);
#   - MPICH/Hydra (forwards the whole environment by default): -f <node file> inside an
#     allocation;
#   - anything else: only -n.
# The job's exit code is mpirun's. See lib.sh for the arguments and docs/launchers.md.

case $0 in */*) _hj_dir=${0%/*} ;; *) _hj_dir=. ;; esac
. "$_hj_dir/lib.sh"

_hj_environment() {  # NAME=VALUE of the exported variables, one a line (newlines escaped)
    awk 'BEGIN {
        for (k in ENVIRON) {
            if (k !~ /^[A-Za-z_][A-Za-z0-9_]*$/) continue
            v = ENVIRON[k]; gsub(/\\/, "\\\\", v); gsub(/\n/, "\\n", v)
            print k "=" v
        }
    }'
}

_hj_changed_names() {  # names whose NAME=VALUE line is not in $_hj_env_before
    # the snapshot goes to awk on its input, then a line "=" (no NAME=VALUE line is
    # that), then the environment now: in awk's environment or arguments, a snapshot
    # over 128 KiB (one string's limit, execve(2)) made awk fail and nothing was passed
    { printf '%s\n=\n' "$_hj_env_before"; _hj_environment; } | awk '
        !now { if ($0 == "=") now = 1; else seen[$0] = 1; next }
        !($0 in seen) { print substr($0, 1, index($0, "=") - 1) }'
}

_hj_env_before=$(_hj_environment)
_hj_pre_launch

_hj_version() {  # <mpirun>: its --version text
    "$1" --version </dev/null 2>&1
}

if [ -n "${HPCJOBS_MPIRUN-}" ]; then
    _hj_mpirun=$HPCJOBS_MPIRUN
    _hj_v=$(_hj_version "$_hj_mpirun")
else
    _hj_mpirun=mpirun
    _hj_v=$(_hj_version mpirun)
    case $_hj_v in
        *"Open MPI"*) ;;
        *)
            if command -v mpirun.openmpi >/dev/null 2>&1; then
                _hj_mpirun=mpirun.openmpi
                _hj_v=$(_hj_version mpirun.openmpi)
            fi
            ;;
    esac
fi
command -v "$_hj_mpirun" >/dev/null 2>&1 ||
    _hj_die 127 "'$_hj_mpirun' not found (PATH=$PATH); load an MPI in pre-launch or set HPCJOBS_MPIRUN"

_hj_in_allocation=
if [ -n "${SLURM_JOB_NODELIST-}" ] || [ -n "${PBS_NODEFILE-}" ]; then
    _hj_in_allocation=1
fi

# Build the command in the positional parameters: options first, then the job's command.
_hj_nargs=$#
case $_hj_v in
    *"Open MPI"*)
        set -- "$@" --oversubscribe
        [ "$(id -u)" != 0 ] || set -- "$@" --allow-run-as-root
        for _hj_name in $(_hj_changed_names); do
            set -- "$@" -x "$_hj_name"
        done
        [ -z "$_hj_in_allocation" ] || set -- "$@" --hostfile "$PSIJ_NODEFILE"
        ;;
    *HYDRA* | *MPICH*)
        [ -z "$_hj_in_allocation" ] || set -- "$@" -f "$PSIJ_NODEFILE"
        ;;
esac
set -- "$@" -n "$_hj_n"
# rotate the job's command (the first $_hj_nargs parameters) behind the options
while [ "$_hj_nargs" -gt 0 ]; do
    set -- "$@" "$1"
    shift
    _hj_nargs=$((_hj_nargs - 1))
done

_hj_start stdin "$_hj_mpirun" "$@"
_hj_wait_all
_hj_post_launch_and_exit
