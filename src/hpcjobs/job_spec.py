"""psij-python's module ``psij.job_spec``: the job specification
(defined in :mod:`hpcjobs.spec`).

It exists so that code written for psij-python runs with only the import changed.
"""

from .spec import JobSpec

__all__ = ["JobSpec"]
