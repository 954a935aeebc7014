"""Provider modules: one per backend, each telling the conformance suite how to run it.

A provider module ``tests/conformance/backends/<name>.py`` (owned by that backend's
engineer) defines::

    NAME: str                    # executor name for JobExecutor.get_instance
    LAUNCHERS: list[str]         # launchers the suite runs this backend with
    CAPABILITIES: set[str]       # optional behaviours it has (names from CAPABILITIES below)
    def unavailable() -> str | None        # why it cannot run here (None: it can)
    def make_executor(work_dir: pathlib.Path) -> hpcjobs.JobExecutor

and may define::

    OPTIONAL: bool = False       # True: may be skipped even under CI=true
    MARKERS: list[str] = []      # pytest markers of its tests (pyproject.toml's), so that
                                 # `-m "not slurm"` leaves out what needs the Slurm cluster
    def launcher_unavailable(launcher: str) -> str | None   # e.g. mpirun not installed

The suite holds every backend to the same behaviour; a test that needs a behaviour a
backend can legitimately lack is marked ``@pytest.mark.requires("<capability>")`` and is
skipped (never failed) for backends without it. Under ``CI=true`` a backend (or one of
its launchers) that reports itself unavailable FAILS its tests instead of skipping,
unless the provider declares ``OPTIONAL = True``.
"""

from __future__ import annotations

#: Every capability name a provider may declare, with what it promises.
CAPABILITIES: dict[str, str] = {
    "executes": "the executable really runs on this machine: output files appear, "
                "arguments and environment reach it byte for byte",
    "exit_code": "a finished job's exit code is reported in JobStatus.exit_code",
    "stdin": "JobSpec.stdin_path is connected to the job's standard input",
    "cancel": "a running job can be cancelled and ends CANCELED",
    "list": "JobExecutor.list() returns the native ids of jobs submitted through it",
    "attach": "a job can be attached by native id from another executor instance",
    "attach_after_client_death": "attach from a new process reports the real final state "
                                 "and exit code after the submitting process was SIGKILLed",
    "signal_exit": "a job killed by a signal ends FAILED with exit_code -N",
    "parallel": "many jobs can run at the same time",
}
