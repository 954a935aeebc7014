"""What a PSI/J job does in the simulation: its Batsim profile.

Either the custom attribute ``batsim.profile`` (a Batsim profile object, checked as
``hpcjobs.sim`` checks a registered profile and sent to the simulator as given) or,
where the spec makes it obvious, a derived one:

- ``sleep N`` (``N`` seconds, GNU suffixes ``s``/``m``/``h``/``d`` allowed): a delay of N s;
- ``true``: a minimal delay (:data:`MIN_DELAY`); ``false``: the same with return code 1.

Real Batsim refuses a delay that is not strictly positive (fixtures/batsim-4.2.1/README:
"profile 'd0' has a non-strictly-positive 'delay' field (0)"), so ``sleep 0``, ``true``
and ``false`` last :data:`MIN_DELAY` simulated seconds. Anything else is an
``InvalidJobException`` saying which attribute to set.
"""

from __future__ import annotations

import functools
import json
import math
import os
from typing import Any

from ...environment import expand, job_environment
from ...errors import InvalidJobException
from ...sim.errors import SimError
from ...sim.workload import executors_mismatch, registered_profile
from ...spec import JobSpec

__all__ = ["profile_for", "check_nodes", "MIN_DELAY", "ATTRIBUTE"]

#: the custom attribute holding an explicit Batsim profile
ATTRIBUTE = "batsim.profile"
#: simulated seconds of a job that does (almost) nothing: Batsim needs delay > 0
MIN_DELAY = 0.001

_SUFFIX = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_HINT = (f"set the custom attribute {ATTRIBUTE!r} to a Batsim profile, "
         "e.g. {'type': 'delay', 'delay': 10}")


def profile_for(spec: JobSpec) -> dict[str, Any]:
    """The Batsim profile simulating ``spec``; ``InvalidJobException`` naming the
    field when there is none."""
    explicit = spec.attributes.get_custom_attribute(ATTRIBUTE)
    if explicit is not None:
        return _checked(explicit)
    program = os.path.basename(spec.executable or "")
    args = spec.arguments or []
    if args and any("${" in a for a in args):
        env = job_environment(spec.inherit_environment, spec.environment)
        args = [expand(a, env) for a in args]
    return _derived(program, spec.executable, tuple(args))


@functools.lru_cache(maxsize=256)
def _derived(program: str, executable: str | None, args: tuple[str, ...]) -> dict[str, Any]:
    # cached: a workflow submits the same few commands over and over (the profile is
    # only read: sent to Batsim, compared for profile reuse)
    if program == "sleep":
        if len(args) != 1:
            raise InvalidJobException(
                f"JobSpec.arguments: 'sleep' takes exactly one duration to be simulated, "
                f"got {list(args)!r}; or {_HINT}")
        return {"type": "delay", "delay": max(_seconds(args[0]), MIN_DELAY)}
    if program == "true":
        return {"type": "delay", "delay": MIN_DELAY}
    if program == "false":
        return {"type": "delay", "delay": MIN_DELAY, "ret": 1}
    raise InvalidJobException(
        f"JobSpec.executable: the Batsim executor cannot simulate {executable!r} "
        f"(only sleep, true and false are derived); {_HINT}")


def check_nodes(profile: dict[str, Any], nodes: int) -> None:
    """``InvalidJobException`` if Batsim refuses a job of ``nodes`` nodes running
    ``profile`` (it aborts the whole simulation at the registration)."""
    if profile["type"] != "parallel":  # (the only kind with an executor count of its own)
        return
    mismatch = executors_mismatch(registered_profile(ATTRIBUTE, profile, SimError, ""), nodes)
    if mismatch:
        raise InvalidJobException(f"JobAttributes.custom_attributes[{ATTRIBUTE!r}], for a job of {nodes} "
                                  f"node(s) (ResourceSpecV1): {mismatch}: Batsim refuses it")


def _seconds(text: str) -> float:
    number, unit = (text[:-1], text[-1]) if text[-1:] in _SUFFIX else (text, "s")
    try:
        value = float(number) * _SUFFIX[unit]
    except ValueError:
        raise InvalidJobException(
            f"JobSpec.arguments: 'sleep' duration {text!r} is not a number of seconds") from None
    if not (math.isfinite(value) and value >= 0):
        raise InvalidJobException(f"JobSpec.arguments: 'sleep' duration {text!r} is not >= 0")
    return value


def _checked(profile: Any) -> dict[str, Any]:
    where = f"JobAttributes.custom_attributes[{ATTRIBUTE!r}]"
    if not isinstance(profile, dict) or not isinstance(profile.get("type"), str):
        raise InvalidJobException(f"{where} must be a Batsim profile object with a 'type', "
                                  f"got {profile!r}")
    try:
        text = json.dumps(profile, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise InvalidJobException(f"{where} is not JSON: {e}") from None
    # the job's own copy, as a decoder would read it (tuples as lists, keys as
    # strings): the simulator may keep it, in this process too, and the client may
    # change its dict after the submit
    own: dict[str, Any] = json.loads(text)
    # Batsim aborts the whole simulation on a profile it refuses (every job FAILED with
    # it): refuse the one job instead, by the rules the embedded simulator checks, on
    # the profile as Batsim reads it
    if own["type"] == "composed":
        raise InvalidJobException(f"{where}: a composed profile names its steps, profiles of the "
                                  "same workload, but the executor registers each job's profile "
                                  "under a name of its own: give each job a simple profile")
    try:
        checked = registered_profile(ATTRIBUTE, own, SimError, "JobAttributes.custom_attributes")
    except SimError as e:
        raise InvalidJobException(str(e)) from None
    if checked.ret < 0:
        # Batsim 4.2.1 reads -1 as a walltime kill, -2 as a kill by the scheduler (and
        # never reports the job), and aborts on the others
        raise InvalidJobException(f"{where}: 'ret' must be >= 0, got {checked.ret} (Batsim reserves "
                                  "-1 and -2 for its kills and aborts on the others)")
    return own
