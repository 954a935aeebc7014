"""``RecordingExecutor``: the test double for unit tests of the executor base."""

from __future__ import annotations

from hpcjobs import Job, JobExecutor, JobState, JobStatus

S = JobState


class RecordingExecutor(JobExecutor):
    """A minimal in-test executor: submit binds the job; the test drives its states.

    It stands for a backend in unit tests of the shared machinery only; every real
    backend is tested against real components elsewhere.
    """

    name = "recording"

    def submit(self, job: Job) -> None:
        with self._submission(job):
            job.bind(self, f"r{job.id[:8]}")
        self._set_job_status(job, JobStatus(S.QUEUED))

    def cancel(self, job: Job) -> None:
        self._set_job_status(job, JobStatus(S.CANCELED))

    def list(self) -> list[str]:
        return []

    def attach(self, job: Job, native_id: str) -> None:
        self._claim_for_attach(job, native_id)
