"""psij-python's module ``psij.job_state``: job states (defined in :mod:`hpcjobs.state`).

It exists so that code written for psij-python runs with only the import changed.
"""

from .state import JobState, JobStateOrder

__all__ = ["JobState", "JobStateOrder"]
