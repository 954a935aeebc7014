"""psij-python's module ``psij.exceptions``: the exceptions (defined in :mod:`hpcjobs.errors`).

It exists so that code written for psij-python runs with only the import changed.
"""

from .errors import InvalidJobException, SubmitException

__all__ = ["InvalidJobException", "SubmitException"]
