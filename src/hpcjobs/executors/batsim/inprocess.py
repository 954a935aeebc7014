"""hpcjobs.sim in the executor's process (the default simulator): no socket, no
encoding, no second process. The simulation (:mod:`hpcjobs.sim.inprocess`) is started
with the flags a simulator process would get and is stepped by the session's decision
thread, inside ``receive``: there is no thread of its own to start, pace or stop, and
the GIL would run one side at a time anyway. What the simulator raises ends the
simulation with the words its process would have died with ("the simulator ended
(exited with code 3): hpcjobs.sim: error: ..."), so every live job fails with it.
"""

from __future__ import annotations

import logging

from ...batsim_protocol.errors import BatsimError
from ...batsim_protocol.events import Message
from ...final_status import describe_exit
from ...sim.inprocess import open_simulation
from .simulator import SimulatorGone

__all__ = ["InProcessSimulator"]

log = logging.getLogger(__name__)


class InProcessSimulator:
    """hpcjobs.sim run in this process with Batsim's command-line ``flags``."""

    description = "hpcjobs.sim in this process"

    def __init__(self, flags: list[str]) -> None:
        self._endpoint = open_simulation(flags)
        self._stopped = False

    def receive(self) -> Message:
        self.check()
        try:
            return self._endpoint.receive(self.check)
        except SimulatorGone:
            raise
        except (BatsimError, OSError) as e:  # what the process prints as its error line
            code = e.exit_code if isinstance(e, BatsimError) else 1
            raise SimulatorGone(f"the simulator ended ({describe_exit(code)}): hpcjobs.sim: error: {e}") from e
        except Exception as e:  # a bug of the simulator: its process would die with a traceback
            log.error("hpcjobs.sim failed in this process", exc_info=e)
            raise SimulatorGone(f"the simulator failed: {e!r}") from e

    def send(self, message: Message) -> None:
        self._endpoint.send(message)

    def check(self) -> None:
        if self._stopped:
            raise SimulatorGone("the simulator was stopped")

    def stop(self) -> None:
        self._stopped = True
        self._endpoint.stop()

    def finish(self, timeout: float) -> None:
        # the last reply ran the simulation to its end, outputs included, in the
        # decision thread (already over): only an error writing them is left to tell
        error = self._endpoint.pending_error
        if error is not None:
            log.error("hpcjobs.sim in this process: %s", error)

    def close(self) -> None:
        self._endpoint.close()
