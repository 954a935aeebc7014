# ranks.sh: the initial program of the Flux instance a job of the Flux executor runs in
# (`flux broker /bin/sh ranks.sh ...`, one broker per node of the allocation, like
# `flux batch`) for the single, multiple and mpirun launchers. Called as
#
#   /bin/sh ranks.sh <launcher> <cores_per_process> <gpus_per_process> \
#           <pre_launch|""> <post_launch|""> <process_count> <processes_per_node> \
#           -- <executable> <arguments...>
#
# It sources pre-launch once (lib.sh), then starts the job's processes with `flux run`:
# one Flux task per process (one in all for `single`), placed by Flux on the nodes of
# the allocation, with Flux's PMI for MPI programs; it waits for them, sources
# post-launch once and exits with the exit code of the lowest failing rank (each rank
# records its own in this instance's KVS, since `flux run` reports only the largest).
# Each rank of `multiple` gets PSIJ_RANK/PSIJ_SIZE and psij-python's
# _PSI_J_PROCESS_INDEX_/_PSI_J_PROCESS_COUNT_, like scripts/multiple.sh.
# See docs/flux.md. POSIX sh; every expansion quoted.

case $0 in */*) _hj_dir=${0%/*} ;; *) _hj_dir=. ;; esac
# lib.sh re-runs its launcher under bash when there is a pre- or post-launch script,
# with the arguments it is given: do it here first, with all of ours
if [ -z "${BASH_VERSION-}" ] && { [ -n "${4-}" ] || [ -n "${5-}" ]; } &&
    command -v bash >/dev/null 2>&1; then
    exec bash "$0" "$@"
fi
_hj_launcher=$1
_hj_cores=$2
_hj_gpus=$3
shift 3
_hj_flux=flux  # the broker puts its own bindir on PATH; lib.sh lists the nodes with it
. "$_hj_dir/../../launchers/scripts/lib.sh"

_hj_pre_launch

case $_hj_launcher in
    single) _hj_count=1 ;;
    *) _hj_count=$_hj_n ;;
esac
# every node of the allocation gets ranks when there are enough of them; Flux spreads
# the tasks evenly over the nodes it is given (flux-run(1) -N)
_hj_size=$(flux getattr size) || _hj_die 1 "cannot ask the job's Flux instance its size"
_hj_nodes=$_hj_size
[ "$_hj_count" -ge "$_hj_nodes" ] || _hj_nodes=$_hj_count
_hj_is_count "$_hj_cores" || _hj_die 2 "cores per process must be a positive integer, got '$_hj_cores'"
# only digits: safe to split unquoted below
_hj_opts="-n $_hj_count -N $_hj_nodes -c $_hj_cores"
[ "$_hj_gpus" = 0 ] || _hj_opts="$_hj_opts -g $((_hj_gpus))"

# The rank's own status goes to the KVS under hpcjobs.rank.<rank>; the rank itself is a
# child of this small shell, which keeps the PMI and FLUX_* environment it inherits.
_hj_rank='
    if [ "$1" = multiple ]; then
        PSIJ_RANK=$FLUX_TASK_RANK PSIJ_SIZE=$FLUX_JOB_SIZE
        _PSI_J_PROCESS_INDEX_=$((FLUX_TASK_RANK + 1)) _PSI_J_PROCESS_COUNT_=$FLUX_JOB_SIZE
        export PSIJ_RANK PSIJ_SIZE _PSI_J_PROCESS_INDEX_ _PSI_J_PROCESS_COUNT_
    fi
    shift
    "$@"
    st=$?
    # in the instance KVS, not the job namespace a task is given (FLUX_KVS_NAMESPACE)
    (unset FLUX_KVS_NAMESPACE; flux kvs put "hpcjobs.rank.$FLUX_TASK_RANK=$st") >/dev/null 2>&1
    exit "$st"'
# shellcheck disable=SC2086
_hj_start stdin flux run $_hj_opts /bin/sh -c "$_hj_rank" hpcjobs-rank "$_hj_launcher" "$@"
_hj_wait_all
# the lowest failing rank's status; a rank that could not record one (killed) leaves
# flux run's own status, which then stands
_hj_r=0
while [ "$_hj_r" -lt "$_hj_count" ]; do
    _hj_st=$(flux kvs get "hpcjobs.rank.$_hj_r" 2>/dev/null) || break
    if [ "$_hj_st" -ne 0 ]; then
        _hj_status=$_hj_st
        break
    fi
    _hj_r=$((_hj_r + 1))
done
_hj_post_launch_and_exit
