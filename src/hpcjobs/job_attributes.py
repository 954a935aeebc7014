"""psij-python's module ``psij.job_attributes``: job attributes
(defined in :mod:`hpcjobs.attributes`).

It exists so that code written for psij-python runs with only the import changed.
"""

from .attributes import JobAttributes

__all__ = ["JobAttributes"]
