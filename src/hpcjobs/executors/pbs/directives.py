"""What a job spec becomes in ``#PBS`` lines (pbs.mustache), for OpenPBS and for Torque.

Both flavours share the name, walltime, account, output and ``-W`` lines; they differ
in how resources are asked for (OpenPBS: ``-l select``/``-l place``, here; Torque:
``-l nodes=N:ppn=P``, ``-l mem``, ``-n``, in torque.py) and in reservations (an OpenPBS
reservation is a queue; Torque has none of its own). docs/pbs.md has the tables.
"""

from __future__ import annotations

import math
import re
from typing import Any, Optional

from ...errors import InvalidJobException
from ...spec import JobSpec
from ..batch.script import custom_attributes, directive_value

__all__ = ["custom", "pbs_resources", "queue"]

_ATTRIBUTE = re.compile(r"[a-z][a-z0-9_]*\Z")
# -W attributes that would break how hpcjobs submits and follows the job
_RESERVED = {name: f"-W {name} would change how hpcjobs runs and follows the job"
             for name in ("block", "sandbox", "stagein", "stageout")}
# qsub -W reads "a=1,b=2" (also "a=1, b=2") as two attributes: a value with a ',' and a
# '=' after it would set another attribute, a reserved one too (-W umask=077,block=true
# sets block), or be refused ("illegal -W value"); a ',' alone stays in the value
# (depend=afterok:1,afterany:2)
_NEXT_ATTRIBUTE = re.compile(r",.*=", re.DOTALL)
# advance (R), standing (S) and maintenance (M) reservation queues: R12 or R12.server
_RESERVATION = re.compile(r"[RSM][0-9]+(\.[A-Za-z0-9_.-]+)?\Z")


def queue(name: Optional[str]) -> dict[str, Any]:
    """``-q``: the queue (or reservation) ``name``, if any."""
    return {"queue": directive_value("JobAttributes.queue_name", name) if name else None}


def pbs_resources(spec: JobSpec) -> dict[str, Any]:
    """``-l select`` and ``-l place``: one chunk per node when the node count is known
    (scattered), else one per process (where PBS likes); ``-q`` (a reservation is a
    queue of its own: R123, S123)."""
    attrs = spec.attributes
    queue_name = attrs.queue_name
    if attrs.reservation_id is not None:
        if not _RESERVATION.match(attrs.reservation_id):
            raise InvalidJobException(
                f"JobAttributes.reservation_id: {attrs.reservation_id!r} is not a PBS "
                "reservation id (R<n>, S<n> or M<n>, optionally .<server>)")
        if queue_name is not None:
            raise InvalidJobException(
                "JobAttributes.queue_name and reservation_id: a PBS job in a reservation "
                "runs in the reservation's queue, so it cannot also name a queue")
        queue_name = attrs.reservation_id
    res = spec.resources_v1
    nodes = res.requested_node_count
    if nodes is None and res.processes_per_node is not None:
        # processes_per_node alone: that many processes on one node (computed_process_count
        # is 1 x processes_per_node; Slurm gets --ntasks-per-node), not one chunk per
        # process placed freely, which may spread them over as many nodes
        nodes = res.computed_node_count
    per_chunk = res.computed_processes_per_node if nodes else 1
    chunk = [str(nodes or res.computed_process_count),
             f"ncpus={per_chunk * (res.cpu_cores_per_process or 1)}",
             f"mpiprocs={per_chunk}"]
    if res.gpu_cores_per_process:
        chunk.append(f"ngpus={per_chunk * res.gpu_cores_per_process}")
    if res.memory:
        if not nodes:
            raise InvalidJobException(
                "ResourceSpecV1.memory is per node, but PBS places processes freely unless "
                "node_count (or processes_per_node) is set: set one to give memory")
        chunk.append(f"mem={math.ceil(res.memory / 1024)}kb")
    place = ["scatter"] if nodes else []
    if res.exclusive_node_use:
        place.append("excl")
    return {"select": ":".join(chunk), "place": ":".join(place) or None,
            **queue(queue_name)}


def custom(spec: JobSpec) -> list[dict[str, str]]:
    """``pbs.<attribute>`` custom attributes as ``#PBS -W attribute=value`` lines:
    None leaves one out, booleans are ``true``/``false``."""
    out = []
    for name, value, field in custom_attributes(
            spec, "pbs", _ATTRIBUTE, "a PBS job attribute name (lower-case letters, digits "
            "and '_')", _RESERVED):
        if value is None:
            continue
        text = str(value).lower() if isinstance(value, bool) else str(value)
        if _NEXT_ATTRIBUTE.search(text):
            raise InvalidJobException(
                f"{field}: {text!r} has a ',' followed by a '=', which qsub's -W reads as "
                "the start of another attribute (or refuses)")
        out.append({"attribute": f"{name}={directive_value(field, text)}"})
    return out
