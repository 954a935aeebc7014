# single.sh: the `single` launcher when a pre- or post-launch script is set (otherwise the
# job's executable runs directly, without a shell). Starts one process, whatever the
# process count; see lib.sh for the arguments and docs/launchers.md for the behaviour.

case $0 in */*) _hj_dir=${0%/*} ;; *) _hj_dir=. ;; esac
. "$_hj_dir/lib.sh"

_hj_pre_launch
_hj_start stdin "$@"
_hj_wait_all
_hj_post_launch_and_exit
