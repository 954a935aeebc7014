"""What is Batsim's and not ours: its protocol, in all three generations, for both ends.

Used by :mod:`hpcjobs.sim` (the Batsim side) and :mod:`hpcjobs.executors.batsim` (the
decision side), so each rule of the protocol is written once:

- :mod:`.events`: messages and the events they carry, one definition of each event
  type with its name in every generation;
- :mod:`.codecs`: wire formats, one module per generation (``json``: Batsim 3-4,
  ``batprotocol``: Batsim 5, ``legacy``: Batsim < 1.0);
- :mod:`.transports`: ZeroMQ REQ/REP, a length-prefixed Unix socket;
- :mod:`.redis_store`: the legacy protocol's job data in Redis;
- :mod:`.platform` (SimGrid platform files, with :mod:`.units`) and :mod:`.intervals`
  (Batsim's resource interval sets);
- :mod:`.errors`: what goes wrong, with the exit code a Batsim-side process uses.
"""

from ..extras import require

# everything of the batsim extra imports this package first: without the extra, say so
require("batsim", "the Batsim executor, simulator and protocols")
