# multiple.sh: the `multiple` launcher. Starts process_count copies of the job's command
# on this node, each with PSIJ_RANK (0-based) and PSIJ_SIZE, plus psij-python's
# _PSI_J_PROCESS_INDEX_ (1-based) and _PSI_J_PROCESS_COUNT_; rank 0 gets the job's
# stdin, the others /dev/null. See lib.sh for the arguments and docs/launchers.md.

case $0 in */*) _hj_dir=${0%/*} ;; *) _hj_dir=. ;; esac
. "$_hj_dir/lib.sh"

_hj_pre_launch
PSIJ_SIZE=$_hj_n
_PSI_J_PROCESS_COUNT_=$_hj_n
export PSIJ_SIZE _PSI_J_PROCESS_COUNT_
_hj_rank=0
_hj_in=stdin
while [ "$_hj_rank" -lt "$_hj_n" ]; do
    # each process takes the environment as it is when it is forked
    PSIJ_RANK=$_hj_rank
    _PSI_J_PROCESS_INDEX_=$((_hj_rank + 1))
    export PSIJ_RANK _PSI_J_PROCESS_INDEX_
    _hj_start "$_hj_in" "$@"
    _hj_in=null
    _hj_rank=$((_hj_rank + 1))
done
unset PSIJ_RANK _PSI_J_PROCESS_INDEX_  # post-launch is not a rank
_hj_wait_all
_hj_post_launch_and_exit
