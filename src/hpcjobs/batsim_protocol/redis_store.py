"""The legacy protocol's job data, kept in Redis (spec/batsim-legacy-redis-data-storage.txt).

Batsim sets, under the prefix ``<absolute socket path>:``, ``nb_res`` (the platform
size) before the simulation begins, and ``job_<id>`` / ``profile_<id>`` (JSON) when job
``<id>`` is submitted; the decision process reads them. Both ends go through a wrapper
of their transport, so the rest of each end sees complete events as with the other
protocols: :class:`PublishingChannel` (Batsim: writes what its outgoing events
announce) and :class:`ReadingEndpoint` (decision process: fills the incoming events
from Redis).
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable

import redis

from .errors import PeerGone, ProtocolError
from .events import Message
from .transports import Channel, Endpoint

__all__ = ["connect", "job_document", "prefix_for", "PublishingChannel", "ReadingEndpoint"]


def connect(url: str) -> redis.Redis:
    """A client of the Redis at ``url`` (``unix:///path/redis.sock``, ``redis://host:port``)."""
    client: redis.Redis = redis.Redis.from_url(url)
    try:
        client.ping()
    except redis.RedisError as e:
        raise PeerGone(f"cannot reach Redis at {url!r}: {e}") from None
    return client


def prefix_for(socket_path: str) -> str:
    """The key prefix of the simulation on ``socket_path``: its absolute name and ':'."""
    return os.path.abspath(socket_path) + ":"


#: the keys every job document must contain, in the order of the specification's example
JOB_KEYS = ("id", "subtime", "walltime", "res", "profile")


def job_document(job_id: str, job: dict[str, Any]) -> dict[str, Any]:
    """The ``job_<id>`` document of a submitted job: every key the specification requires
    (``walltime`` -1 for a job without one, as Batsim writes it), then the workload's
    others. ``id`` is "the job number within a given workload": a number when the job's
    name is one, else the name."""
    name = job_id.split("!", 1)[1]
    number: int | str = int(name) if name.lstrip("-").isdigit() and str(int(name)) == name else name
    doc: dict[str, Any] = {"id": number, "subtime": job["subtime"], "walltime": job.get("walltime", -1),
                           "res": job["res"], "profile": job["profile"]}
    doc.update((key, value) for key, value in job.items() if key not in JOB_KEYS)
    return doc


class PublishingChannel:
    """Batsim's end: before a message goes out, store what its events announce."""

    def __init__(self, inner: Channel, client: redis.Redis, prefix: str) -> None:
        self._inner = inner
        self._client = client
        self._prefix = prefix

    @property
    def waited(self) -> float:
        return self._inner.waited

    def exchange(self, message: Message) -> Message:
        pipe = self._client.pipeline(transaction=False)
        for event in message.events:
            kind, data = event["type"], event["data"]
            if kind == "SIMULATION_BEGINS":
                pipe.set(self._prefix + "nb_res", str(data["nb_compute_resources"]))
            elif kind == "JOB_SUBMITTED":
                job_id = data["job_id"]
                pipe.set(f"{self._prefix}job_{job_id}", json.dumps(job_document(job_id, data["job"])))
                pipe.set(f"{self._prefix}profile_{job_id}", json.dumps(data.get("profile", {})))
        try:
            pipe.execute()
        except redis.RedisError as e:
            raise PeerGone(f"cannot write the job data to Redis: {e}") from None
        return self._inner.exchange(message)

    def farewell(self, message: Message) -> None:
        self._inner.farewell(message)

    def close(self) -> None:
        self._inner.close()


class ReadingEndpoint:
    """The decision process's end: each SIMULATION_BEGINS gets the platform and each
    JOB_SUBMITTED its job and profile, read from Redis, as the JSON protocol has them."""

    def __init__(self, inner: Endpoint, client: redis.Redis, prefix: str) -> None:
        self._inner = inner
        self._client = client
        self._prefix = prefix

    def receive(self, alive: Callable[[], None]) -> Message:
        msg = self._inner.receive(alive)
        submitted = []
        for event in msg.events:
            kind, data = event["type"], event["data"]
            if kind == "SIMULATION_BEGINS":
                (raw,) = self._get(["nb_res"])
                count = int(raw)
                data.update(nb_resources=count, nb_compute_resources=count,
                            compute_resources=[{"id": i, "name": str(i), "state": "idle", "properties": {},
                                                "zone_properties": {}} for i in range(count)])
            elif kind == "JOB_SUBMITTED":
                submitted.append(data)
        if submitted:  # one round trip for all the jobs of the message
            keys = [f"{kind}_{data['job_id']}" for data in submitted for kind in ("job", "profile")]
            values = iter(self._get(keys))
            for data, key in zip(submitted, keys[::2]):
                job = data["job"] = self._json(key, next(values))
                job["id"] = data["job_id"]
                if job.get("walltime") == -1:
                    del job["walltime"]  # none: the JSON protocol leaves it out
                data["profile"] = self._json(key.replace("job_", "profile_", 1), next(values))
        return msg

    def _get(self, keys: list[str]) -> list[bytes]:
        try:
            values: list[Any] = self._client.mget([self._prefix + key for key in keys])
        except redis.RedisError as e:
            raise PeerGone(f"cannot read {keys[0]!r} from Redis: {e}") from None
        for key, value in zip(keys, values):
            if value is None:
                raise ProtocolError(f"Batsim did not set {self._prefix + key!r} in Redis", key)
        return values

    def _json(self, key: str, raw: bytes) -> dict[str, Any]:
        try:
            value = json.loads(raw)
        except ValueError as e:
            raise ProtocolError(f"Redis key {self._prefix + key!r} is not JSON: {e}", key) from None
        if not isinstance(value, dict):
            raise ProtocolError(f"Redis key {self._prefix + key!r} is not a JSON object", key)
        return value

    def send(self, message: Message) -> None:
        self._inner.send(message)

    def close(self) -> None:
        self._inner.close()
