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

__all__ = ["connect", "prefix_for", "PublishingChannel", "ReadingEndpoint"]


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
                job = dict(data["job"])
                job_id = data["job_id"]
                job["id"] = job_id.split("!", 1)[1]  # "the job number within a given workload"
                pipe.set(f"{self._prefix}job_{job_id}", json.dumps(job))
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
                data["job"] = self._json(key, next(values))
                data["job"]["id"] = data["job_id"]
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
