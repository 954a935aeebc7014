"""psij-python's module ``psij.job_status``: a job's status (defined in :mod:`hpcjobs.state`).

It exists so that code written for psij-python runs with only the import changed.
"""

from .state import JobStatus

__all__ = ["JobStatus"]
