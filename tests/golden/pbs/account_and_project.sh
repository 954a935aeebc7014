#!/bin/sh
#PBS -N true
#PBS -S /bin/sh
#PBS -l select=1:ncpus=1:mpiprocs=1
#PBS -l walltime=0:10:00
#PBS -A acct-1
#PBS -P 'proj 1'
#PBS -o /home/user/.hpcjobs/work/batch/job-1/batch.out
#PBS -j oe
#PBS -k oed
# The script records its own life in its job directory, so the client sees the job
# start and end without asking the scheduler: "started" when it begins, "exitcode"
# ("<status> <signal the script caught, or -> <the JobSpec field it could not use, or
# ->") when it ends, also after a SIGTERM (walltime, cancel). A scheduler may send that
# SIGTERM to this shell only (Slurm does; PBS signals the whole session): the job runs
# in the background so that the trap runs at once, whichever the scheduler, and passes
# the signal on.
# After each, a note to the submitting executor's monitor so that it looks at this job's
# files without scanning every job's (batch/changes.py); no notes directory, no note.
# These files are private (umask 077); the job itself runs under the user's umask.
_hj_dir=/home/user/.hpcjobs/work/batch/job-1
_hj_caught=-
_hj_unusable=-
_hj_pid=
_hj_umask=
while read -r _hj_key _hj_value; do
    case $_hj_key in Umask:) _hj_umask=$_hj_value; break ;; esac
done 2>/dev/null </proc/$$/status
[ -n "$_hj_umask" ] || _hj_umask=$(umask)
umask 077
_hj_changed() { :; }
_hj_record() {
    umask 077
    printf '%s %s %s\n' "$1" "$_hj_caught" "$_hj_unusable" >"$_hj_dir/exitcode" && _hj_changed
}
trap '_hj_caught=TERM; _hj_woken=1; [ -z "$_hj_pid" ] || kill -s TERM "$_hj_pid" 2>/dev/null' TERM
trap '_hj_record "$?"' EXIT
printf '%s\n' "$$" >"$_hj_dir/started" && _hj_changed
umask "$_hj_umask"
. /home/user/.hpcjobs/work/batch/job-1/environment
export HPCJOBS_JOB_DIR="$_hj_dir"
[ "$_hj_caught" = - ] || exit 143
/bin/true &
_hj_pid=$!
_hj_status=
while :; do
    _hj_woken=
    wait "$_hj_pid"
    _hj_st=$?
    # after a wait a signal interrupted, waiting again for the reaped job gives 127, or
    # -1 (bash 5.2 when the job's status was collected during the trap): keep the status
    # the interrupted wait had
    case $_hj_st in 127 | -*) [ -n "$_hj_status" ] && break ;; esac
    _hj_status=$_hj_st
    # a trapped SIGTERM interrupts wait while the job still runs: wait for it again
    [ -n "$_hj_woken" ] || break
done
exit "$_hj_status"
