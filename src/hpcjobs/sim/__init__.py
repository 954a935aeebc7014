"""hpcjobs.sim: an embedded, pip-installable stand-in for the ``batsim`` program.

It speaks Batsim 4.2.1's JSON/ZeroMQ protocol as a separate process
(``python -m hpcjobs.sim``), reads SimGrid platform files and Batsim workloads, and
writes Batsim's ``_jobs.csv`` / ``_schedule.csv``. See docs/sim.md for what is
supported. Of the rest of hpcjobs, only the Batsim protocol stack
(:mod:`hpcjobs.batsim_protocol`) is imported.
"""

BATSIM_VERSION = "4.2.1"
