# srun.sh: the `srun` launcher. Runs the job's command as one Slurm job step of
# <process_count> tasks (srun sets SLURM_PROCID/SLURM_NTASKS in each task). See lib.sh for
# the arguments and docs/slurm.md for the behaviour.
#   --export=ALL: the step gets this shell's environment (with what pre-launch set), even
#     when the job was submitted with --export=NONE, which srun would otherwise inherit;
#   --cpus-per-task: since Slurm 22.05 srun no longer inherits the batch job's value
#     (https://slurm.schedmd.com/srun.html, SRUN_CPUS_PER_TASK).

case $0 in */*) _hj_dir=${0%/*} ;; *) _hj_dir=. ;; esac
. "$_hj_dir/lib.sh"

_hj_pre_launch
set -- --export=ALL --ntasks="$_hj_n" "$@"
if [ -n "${SLURM_CPUS_PER_TASK-}" ]; then
    set -- --cpus-per-task="$SLURM_CPUS_PER_TASK" "$@"
fi
_hj_start stdin srun "$@"
_hj_wait_all
_hj_post_launch_and_exit
