"""How long a profile runs on an allocation, its return code, and its progress when killed.

Computation and communication of parallel profiles follow a simplified version of
SimGrid's L07 parallel-task model (docs/sim.md, "Network model"): a task lasts the
largest route latency among its communicating executor pairs plus the time of its most
loaded resource (host: flops / (speed x cores in use); link: bytes / bandwidth, where a
FATPIPE link counts only its largest flow). A composed profile runs its steps in order,
``repeat`` times, and stops at the first step whose return code is not 0.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from ..batsim_protocol.platform import Host, Link, Platform
from .errors import ProtocolViolation
from .workload import Profile

ProfileLookup = Callable[[str], Profile]


class Execution:
    """One job's run: its executors' hosts and a per-job cache of leaf durations."""

    __slots__ = ("_cache", "hosts", "lookup", "platform")

    def __init__(self, platform: Platform, hosts: list[Host], lookup: ProfileLookup) -> None:
        self.platform = platform
        self.hosts = hosts  # executor rank -> host (after the EXECUTE_JOB mapping)
        self.lookup = lookup
        self._cache: dict[str, float] | None = None  # created on first parallel task

    def run(self, profile: Profile) -> tuple[float, int]:
        """Duration and return code of ``profile`` on this execution."""
        if profile.kind == "delay":
            return profile.delay, profile.ret
        if profile.kind != "composed":
            return self.leaf_duration(profile), profile.ret
        once = 0.0
        for name in profile.seq:
            duration, ret = self.run(self.lookup(name))
            once += duration
            if ret != 0:
                return once, ret
        # every repetition is the same run: no loop over `repeat` (it may be huge)
        return once * profile.repeat, profile.ret

    def ending(self, profile: Profile, walltime: float) -> tuple[float, int, bool, float, bool]:
        """How a run of ``profile`` ends under ``walltime`` (-1: none): its duration,
        return code, whether the walltime stopped it, when the step it ends in
        started, and whether it ends as a parallel task finishing by itself (Batsim
        reports those a few SimGrid scheduling rounds after timer-based endings:
        delay steps, walltime kills, submissions, requested calls)."""
        duration, ret = self.run(profile)
        if walltime != -1 and duration >= walltime:
            start = 0.0
            for step, length in self._steps(profile, walltime):
                start = step
                if step + length >= walltime:
                    break
            return walltime, -1, True, start, False
        last_start = 0.0
        for step, _ in self._steps(profile, duration):
            last_start = step
        return duration, ret, False, last_start, self._last_leaf(profile).kind != "delay"

    def _steps(self, profile: Profile, until: float) -> Iterator[tuple[float, float]]:
        """(start, duration) of the leaf steps of a run, up to the one running at ``until``."""
        if profile.kind != "composed":
            yield 0.0, self.run(profile)[0]
            return
        leaves = self._leaves(profile)
        once = sum(length for length, _ in leaves)
        rounds = min(int(until // once), profile.repeat - 1) if once > 0 else 0
        t = rounds * once
        for length, _ in leaves:
            yield t, length
            if t + length >= until:
                return
            t += length

    def _leaves(self, profile: Profile) -> list[tuple[float, Profile]]:
        """The leaf steps of one repetition of a composed profile, up to its first
        failing one."""
        out: list[tuple[float, Profile]] = []
        for name in profile.seq:
            sub = self.lookup(name)
            if sub.kind == "composed":
                for _ in range(sub.repeat):
                    out.extend(self._leaves(sub))
            else:
                out.append((self.run(sub)[0], sub))
            if self.run(sub)[1] != 0:
                break
        return out

    def _last_leaf(self, profile: Profile) -> Profile:
        while profile.kind == "composed":
            profile = self._leaves(profile)[-1][1]
        return profile

    def killed_return_code(self, progress: dict[str, Any]) -> int:
        """The return code Batsim gives a job killed with this ``progress``: -1 in a
        delay step (its sleep is cut short), -2 in a parallel task (differential test)."""
        while "current_task" in progress:
            progress = progress["current_task"]
        return -1 if self.lookup(progress["profile_name"]).kind == "delay" else -2

    def progress(self, profile: Profile, elapsed: float) -> dict[str, Any]:
        """Batsim's ``job_progress`` object after ``elapsed`` seconds (killed job)."""
        if profile.kind != "composed":
            duration = self.run(profile)[0]
            done = elapsed / duration if duration > 0 else 0.0
            # written to the microsecond, as Batsim does ("%f": 1/3 is 0.333333)
            return {"profile_name": profile.name, "progress": float(f"{min(max(done, 0.0), 1.0):f}")}
        steps = [(name, self.run(self.lookup(name))[0]) for name in profile.seq]
        once = sum(duration for _, duration in steps)
        rounds = min(int(elapsed // once), profile.repeat - 1) if once > 0 else 0
        elapsed -= rounds * once
        for index, (name, duration) in enumerate(steps):
            if elapsed < duration or index == len(steps) - 1:
                return {"profile_name": profile.name, "current_task_index": rounds * len(steps) + index,
                        "current_task": self.progress(self.lookup(name), elapsed)}
            elapsed -= duration
        raise AssertionError("unreachable: a composed profile has at least one step")

    def leaf_duration(self, profile: Profile) -> float:
        if self._cache is None:
            self._cache = {}
        cached = self._cache.get(profile.name)
        if cached is None:
            cached = self._ptask(*self._matrices(profile))
            self._cache[profile.name] = cached
        return cached

    def _matrices(self, profile: Profile) -> tuple[list[float], list[float]]:
        n = len(self.hosts)
        if profile.kind == "parallel":
            if len(profile.cpu) != n:
                raise ProtocolViolation(f"profile {profile.name!r} has {len(profile.cpu)} executors but the job "
                                        f"got {n} (one per allocated resource, or per 'mapping' rank)")
            return list(profile.cpu), list(profile.com)
        cpu, com = profile.cpu[0], profile.com[0]
        if profile.kind == "parallel_homogeneous_total":
            cpu = cpu / n
            com = com / (n * (n - 1)) if n > 1 else 0.0
        return [cpu] * n, [0.0 if i == j else com for i in range(n) for j in range(n)]

    def _ptask(self, cpu: list[float], com: list[float]) -> float:
        n = len(cpu)
        host_load: dict[str, float] = {}
        host_users: dict[str, int] = {}
        speeds: dict[str, Host] = {}
        for rank, flops in enumerate(cpu):
            host = self.hosts[rank]
            speeds[host.name] = host
            host_load[host.name] = host_load.get(host.name, 0.0) + flops
            host_users[host.name] = host_users.get(host.name, 0) + (1 if flops > 0 else 0)
        bottleneck = 0.0
        for name, load in host_load.items():
            if load > 0:
                host = speeds[name]
                bottleneck = max(bottleneck, load / (host.speed * min(host.cores, max(host_users[name], 1))))
        link_load: dict[Link, float] = {}
        latency = 0.0
        for i in range(n):
            for j in range(n):
                amount = com[i * n + j]
                if amount <= 0:
                    continue
                route = self.platform.route(self.hosts[i].name, self.hosts[j].name)
                latency = max(latency, sum(link.latency for link in route))
                for link in route:
                    previous = link_load.get(link, 0.0)
                    link_load[link] = max(previous, amount) if link.fatpipe else previous + amount
        for link, load in link_load.items():
            bottleneck = max(bottleneck, load / link.bandwidth)
        return latency + bottleneck
