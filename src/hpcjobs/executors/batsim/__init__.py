"""The Batsim executor: PSI/J jobs on a simulated cluster (docs/batsim.md).

``JobExecutor.get_instance('batsim', config=...)``; settings in
:class:`.config.BatsimExecutorConfig`, schedulers in :mod:`.schedulers`.
"""

from .config import BatsimExecutorConfig
from .executor import BatsimJobExecutor

__all__ = ["BatsimJobExecutor", "BatsimExecutorConfig"]
