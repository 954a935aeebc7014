"""The pilot executor (``JobExecutor.get_instance('pilot', config=...)``): jobs inside a
Flux instance that runs as one batch job (PSI/J Layer 2).

config.py      PilotConfig: the batch job's size and limits, attach, what close() does
allocation.py  the pilot's batch job (public batch executor API) and its Flux URI
pilot.sh       the batch job's body: flux start, publish the URI, wait to be stopped
executor.py    PilotJobExecutor: jobs wait for the pilot, then run as Flux jobs in it

Importing this package imports neither flux-core's bindings nor a batch backend.
"""

from .config import PilotConfig
from .executor import PilotJobExecutor

__all__ = ["PilotConfig", "PilotJobExecutor"]
