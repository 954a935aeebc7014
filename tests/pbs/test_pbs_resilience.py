"""The PBS executor when things go wrong, against a real OpenPBS: a qstat failing 30% of
the time, a client killed mid-flight, other users' jobs, hostile names and arguments,
input PBS cannot take and qsub's own refusals."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hpcjobs import (InvalidJobException, Job, JobAttributes, JobExecutor, JobSpec, JobState,
                     ResourceSpecV1, SubmitException)

from pbs_helpers import WAIT, qstat, qsub, run, shim, wait_until
from pbs_restart import restarting

HOSTILE = "it's \"$HOME\" `id` $(id) \\ ; & | * ~ %j é @:=,\nline2"


def final(job: Job) -> tuple[JobState, int | None, str]:
    status = job.wait(timeout=WAIT)
    assert status is not None and status.state.final, status
    return status.state, status.exit_code, status.message or ""


def test_a_failing_qstat_changes_no_state_wrongly(pbs_server: None, work_dir: Path,
                                                  tmp_path: Path) -> None:
    # 30% of qstat calls fail as an unreachable server makes them fail
    bin_dir = shim(tmp_path / "bin", "qstat",
                   'if [ $(( $(od -An -N1 -tu1 /dev/urandom) % 10 )) -lt 3 ]; then\n'
                   '  echo "Connection refused" >&2\n'
                   '  echo "qstat: cannot connect to server vm (errno=15010)" >&2; exit 2\n'
                   'fi\nexec "$REAL" "$@"')
    ex = JobExecutor.get_instance("pbs", config={"work_directory": work_dir,
                                                 "bin_directory": bin_dir,
                                                 "min_query_interval": 0.5,
                                                 "max_query_interval": 2.0})
    try:
        ok, bad = Job(JobSpec("/bin/true")), Job(JobSpec("/bin/sh", ["-c", "exit 4"]))
        cancelled = Job(JobSpec("/bin/sleep", ["600"]))
        attached = Job()  # no job files: qstat is its only witness
        plain = qsub("--", "/bin/sh", "-c", "sleep 1; exit 6")
        for job in (ok, bad, cancelled):
            ex.submit(job)
        ex.attach(attached, plain)
        assert cancelled.wait(timeout=WAIT, target_states=JobState.ACTIVE) is not None
        cancelled.cancel()
        assert final(ok)[:2] == (JobState.COMPLETED, 0)
        assert final(bad)[:2] == (JobState.FAILED, 4)
        assert final(cancelled)[0] is JobState.CANCELED
        assert final(attached)[:2] == (JobState.FAILED, 6)
    finally:
        ex.close()


KILLED_CLIENT = """
import sys, time
import hpcjobs
ex = hpcjobs.JobExecutor.get_instance('pbs', config={'work_directory': sys.argv[1]})
job = hpcjobs.Job(hpcjobs.JobSpec('/bin/sh', ['-c', 'sleep 3; exit 4']))
ex.submit(job)
print(job.native_id, flush=True)
time.sleep(600)
"""


def test_a_client_killed_mid_flight_then_reattaching(pbs_server: None, work_dir: Path) -> None:
    client = subprocess.Popen([sys.executable, "-c", KILLED_CLIENT, str(work_dir)],
                              stdout=subprocess.PIPE, text=True)
    assert client.stdout is not None
    native_id = client.stdout.readline().strip()
    client.send_signal(signal.SIGKILL)
    client.wait(60)
    assert native_id, "the client printed no job id"
    with JobExecutor.get_instance("pbs", config={"work_directory": work_dir}) as ex:
        job = Job()
        ex.attach(job, native_id)
        state, code, message = final(job)
        # from its files, or (killed before the monitor linked them) from PBS's record
        assert (state, code) == (JobState.FAILED, 4) and "exited with code 4" in message


def test_other_users_jobs_are_visible_but_never_touched(executor: JobExecutor) -> None:
    theirs = [qsub("-l", "walltime=00:05:00", "--", "/bin/sleep", "300", user="pbsuser"),
              qsub("-l", "select=1:ncpus=999", "--", "/bin/true", user="pbsuser")]
    try:
        # ours, including one PBS can never run (which the executor deletes)
        never = Job(JobSpec("/bin/true", resources=ResourceSpecV1(cpu_cores_per_process=999)))
        done = Job(JobSpec("/bin/true"))
        for job in (never, done):
            executor.submit(job)
        assert final(never)[0] is JobState.FAILED and final(done)[0] is JobState.COMPLETED
        assert not set(theirs) & set(executor.list())
        assert [qstat(i)["job_state"] for i in theirs] == ["R", "Q"]  # untouched
    finally:
        run("qdel", *theirs, check=False)


def test_another_users_job_that_can_never_run_is_reported_not_deleted(
        executor: JobExecutor) -> None:
    # attached, not submitted: PBS's "Can Never Run" ends it FAILED here, but the job is
    # its submitter's to delete (this client is root: qdel would have removed it)
    theirs = qsub("-l", "select=1:ncpus=999", "--", "/bin/true", user="pbsuser")
    try:
        job = Job()
        executor.attach(job, theirs)
        state, _, message = final(job)
        assert state is JobState.FAILED and "Can Never Run" in message
        assert qstat(theirs)["job_state"] == "Q"
    finally:
        run("qdel", theirs, check=False)


def test_hostile_names_and_arguments_reach_the_job(executor: JobExecutor,
                                                   tmp_path: Path) -> None:
    out = tmp_path / "out"
    job = Job(JobSpec("/usr/bin/printf", ["%s\\0", HOSTILE, "${HOME}", "$HOME", ""],
                      name=HOSTILE, environment={"V": HOSTILE}, stdout_path=out))
    executor.submit(job)
    assert final(job)[:2] == (JobState.COMPLETED, 0)
    assert out.read_bytes() == ("\0".join([HOSTILE, os.environ["HOME"], "$HOME", ""]) + "\0"
                                ).encode()
    # the name PBS took: qsub refuses '@', ':', '%', '=', ',', quotes, spaces, non-ASCII
    name = qstat(job.native_id or "")["Job_Name"]
    assert name.startswith("it_s") and set(name) <= set(
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


@pytest.mark.parametrize("attributes, resources, field", [
    (JobAttributes(reservation_id="resv 1"), None, "reservation_id"),
    (JobAttributes(reservation_id="R1", queue_name="workq"), None, "queue_name"),
    (JobAttributes(queue_name="a\nb"), None, "queue_name"),
    (JobAttributes(custom_attributes={"pbs.block": True}), None, "pbs.block"),
    (JobAttributes(custom_attributes={"pbs.Bad Name": 1}), None, "pbs.Bad Name"),
    # qsub would read a second attribute, a reserved one: block=true
    (JobAttributes(custom_attributes={"pbs.umask": "077, block=true"}), None, "pbs.umask"),
    (None, ResourceSpecV1(process_count=4, memory=2**30), "memory"),
])
def test_what_pbs_cannot_take_is_refused_before_qsub(executor: JobExecutor, work_dir: Path,
                                                     attributes: JobAttributes | None,
                                                     resources: ResourceSpecV1 | None,
                                                     field: str) -> None:
    spec = JobSpec("/bin/true", attributes=attributes or JobAttributes(), resources=resources)
    with pytest.raises(InvalidJobException, match=field.replace(".", r"\.")):
        executor.submit(Job(spec))
    # nothing left behind, so nothing was handed to qsub
    assert not work_dir.exists() or not any(p.name != "ids" for p in work_dir.iterdir())


@pytest.mark.parametrize("name", ["wörk", "line\nbreak", "host:path"])
def test_a_work_directory_qsub_cannot_take_is_refused_before_qsub(pbs_server: None,
                                                                  tmp_path: Path,
                                                                  name: str) -> None:
    # qsub: "illegal -o value" (non-ASCII), "unmatched" (the #PBS -o line broken)
    with JobExecutor.get_instance("pbs", config={"work_directory": tmp_path / name}) as ex:
        with pytest.raises(InvalidJobException, match="work_directory"):
            ex.submit(Job(JobSpec("/bin/true")))


def test_qsub_refusals_carry_pbs_message(executor: JobExecutor, tmp_path: Path,
                                         work_dir: Path) -> None:
    job = Job(JobSpec("/bin/true", attributes=JobAttributes(queue_name="nosuchqueue")))
    with pytest.raises(SubmitException, match="Unknown queue") as refused:
        executor.submit(job)
    assert not refused.value.transient
    # an unreachable server: the same refusal, marked transient
    bin_dir = shim(tmp_path / "bin", "qsub",
                   'echo "Connection refused" >&2\n'
                   'echo "qsub: cannot connect to server vm (errno=15010)" >&2; exit 1')
    with JobExecutor.get_instance("pbs", config={"work_directory": work_dir,
                                                 "bin_directory": bin_dir}) as ex:
        with pytest.raises(SubmitException, match="cannot connect") as down:
            ex.submit(Job(JobSpec("/bin/true")))
        assert down.value.transient


def test_the_server_restarted_mid_run(executor: JobExecutor) -> None:
    # restarting a server is the installation's business: scripts/test.sh says how
    restart = os.environ.get("HPCJOBS_PBS_RESTART")
    if not restart:
        pytest.skip("HPCJOBS_PBS_RESTART (a command that starts the PBS server) is not set")
    job = Job(JobSpec("/bin/sh", ["-c", "sleep 15; exit 3"]))
    executor.submit(job)
    assert job.wait(timeout=WAIT, target_states=JobState.ACTIVE) is not None
    with restarting():  # (other test groups' server checks wait this out)
        run("qterm", "-t", "quick")  # the server stops; the MoM keeps the job running
        try:
            down = Job(JobSpec("/bin/true"))
            with pytest.raises(SubmitException) as refused:
                executor.submit(down)
            assert refused.value.transient
            time.sleep(5)  # status queries fail meanwhile: nothing may change
            assert job.status.state is JobState.ACTIVE
        finally:
            subprocess.run(restart, shell=True, check=True, capture_output=True, timeout=120)
    # A restarted server may find the running job out of step with its MoM: it discards
    # it ("Discard running job, state mismatch" in server_logs) and requeues it once the
    # MoM has let go. The scheduler would run it again only at its next cycle
    # (scheduler_iteration, 10 min by default), and a cycle started before the requeue
    # sees nothing to run (a local run in three): start a cycle whenever PBS has it queued.
    def ended_or_rescheduled() -> bool:
        if job.status.state.final:
            return True
        if qstat(str(job.native_id)).get("job_state") == "Q":
            run("qmgr", "-c", "set server scheduling = True")
        return False

    wait_until(ended_or_rescheduled, "the job to end after the server's restart")
    assert final(job)[:2] == (JobState.FAILED, 3)
    after = Job(JobSpec("/bin/true"))
    executor.submit(after)
    assert final(after)[:2] == (JobState.COMPLETED, 0)


def test_an_id_of_another_server_does_not_stall_the_others(executor: JobExecutor) -> None:
    # qstat answers for the other ids, and says "illegally formed job identifier" for
    # this one (exit 1): that is a word about this id, not a failed query
    plain = qsub("--", "/bin/sh", "-c", "sleep 1; exit 6")
    mine, foreign = Job(), Job()
    executor.attach(mine, plain)
    executor.attach(foreign, "1.nosuchserver")
    assert final(mine)[:2] == (JobState.FAILED, 6)
    state, code, message = final(foreign)
    assert (state, code) == (JobState.FAILED, None) and "unknown" in message


def test_a_long_name_is_cut_to_what_qsub_takes(executor: JobExecutor) -> None:
    # qsub refuses a -N longer than 230 characters ("Job name is too long")
    job = Job(JobSpec("/bin/true", name="n" * 231 + "-tail"))
    executor.submit(job)
    assert final(job)[:2] == (JobState.COMPLETED, 0)
    assert qstat(job.native_id or "")["Job_Name"] == "n" * 230


def _hanging_qsub(bin_dir: Path) -> Path:
    """A qsub that submits, then hangs until it is given up on, once its job has ended."""
    return shim(bin_dir, "qsub",
                'id=$("$REAL" "$@") || exit\n'
                'while "$(dirname "$REAL")/qstat" "$id" >/dev/null 2>&1; do sleep 0.2; done\n'
                'exec sleep 120')


def _submitted_despite_the_timeout(work_dir: Path, bin_dir: Path) -> None:
    """A job whose qsub (``bin_dir``'s) timed out after its job ran is found, and ends
    in its true state."""
    with JobExecutor.get_instance("pbs", config={"work_directory": work_dir,
                                                 "bin_directory": bin_dir,
                                                 "command_timeout": 20.0}) as ex:
        job = Job(JobSpec("/bin/sh", ["-c", "exit 3"]))
        ex.submit(job)
        assert final(job)[:2] == (JobState.FAILED, 3)


def test_a_qsub_that_hangs_after_a_short_job_ended_still_submitted_it(
        pbs_server: None, work_dir: Path, tmp_path: Path) -> None:
    # meanwhile the job has run and ended: it is found in PBS's history by its script,
    # not reported unsubmitted
    _submitted_despite_the_timeout(work_dir, _hanging_qsub(tmp_path / "bin"))


def test_a_timed_out_qsub_is_found_among_a_busy_minute_of_jobs(
        pbs_server: None, work_dir: Path, tmp_path: Path) -> None:
    # the search reads the recent history a chunk of ids per qstat, newest first: one
    # qstat of a busy minute's 3,000 ids outlasted the command timeout and the job, which
    # had run, was reported unsubmitted. Here qstat refuses more than 100 ids at once
    # (standing in for the time so many take), with 150 other jobs in the window.
    held = [qsub("-h", "--", "/bin/true") for _ in range(150)]
    try:
        bin_dir = _hanging_qsub(tmp_path / "bin")
        shim(bin_dir, "qstat",
             'n=0; for a; do case $a in [0-9]*) n=$((n + 1)) ;; esac; done\n'
             '[ "$n" -le 100 ] || { echo "qstat: $n ids at once" >&2; exit 9; }\n'
             'exec "$REAL" "$@"')
        _submitted_despite_the_timeout(work_dir, bin_dir)
    finally:
        run("qdel", *held, check=False)


def test_a_backslash_in_a_qsub_command_line_leaves_qstat_readable(executor: JobExecutor) -> None:
    # qstat -F json prints Submit_arguments with its backslashes raw ("a\qb": an invalid
    # JSON escape), which made every answer naming such a job unreadable
    odd = qsub("-v", "X=a\\qb", "--", "/bin/sh", "-c", "sleep 1; exit 4", user="pbsuser")
    plain = qsub("--", "/bin/sh", "-c", "sleep 1; exit 6")
    jobs = [Job(), Job()]
    for job, native_id in zip(jobs, (odd, plain)):
        executor.attach(job, native_id)
    assert [final(job)[:2] for job in jobs] == [(JobState.FAILED, 4), (JobState.FAILED, 6)]
