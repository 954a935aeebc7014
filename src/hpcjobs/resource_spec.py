"""psij-python's module ``psij.resource_spec``: resource specifications
(defined in :mod:`hpcjobs.resources`).

It exists so that code written for psij-python runs with only the import changed.
"""

from .resources import ResourceSpec, ResourceSpecV1

__all__ = ["ResourceSpec", "ResourceSpecV1"]
