"""The concurrency slots of personal connections, counted without the database (gate.py).

A personal connection has no budget, so its lease is only a slot, and taking one needs no row lock: an atomic
take-if-below-the-limit is enough. Without REDIS_URL the server is one process (the channel layer is in memory,
so no other process could relay a stream), and the slots are a set per connection in this process. With
REDIS_URL every process counts in one sorted set per connection (and database) in Redis: a member per lease,
scored with the time it expires. The holder's process pushes the expiry on every heartbeat (lib/detached.py), so
a lease whose process died stops counting once it is stale, as a lease row does; a script takes a slot in one
step (drop the expired, count, add below the limit).

A lease id is "<connection id>:<this process>:<n>": a string, where the database's leases are integers.
"""

import itertools
import math
import threading
import time

from django import db
from django.conf import settings

from playground.lib import detached

_ids = itertools.count(1)

# KEYS[1] the connection's set; ARGV: now, limit, lease id, its expiry. The members in use when refused, else -1.
TAKE = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
local in_use = redis.call('ZCARD', KEYS[1])
if in_use >= tonumber(ARGV[2]) then return in_use end
redis.call('ZADD', KEYS[1], ARGV[4], ARGV[3])
redis.call('PEXPIREAT', KEYS[1], math.ceil(tonumber(ARGV[4]) * 1000))
return -1
"""


def new_id(connection_id: int) -> str:
    return f"{connection_id}:{detached.WORKER_ID}:{next(_ids)}"


def connection_of(lease_id: str) -> int:
    return int(lease_id.split(":", 1)[0])


class Memory:
    """This process's slots: one set of lease ids per connection, behind a lock (open() runs in threads)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._held: dict[int, set[str]] = {}

    def take(self, connection_id: int, lease_id: str, limit: int) -> int:
        """-1 once the slot is taken, else how many are in use."""
        with self._lock:
            held = self._held.setdefault(connection_id, set())
            if len(held) >= limit:
                return len(held)
            held.add(lease_id)
            return -1

    def give(self, lease_id: str) -> None:
        with self._lock:
            held = self._held.get(connection_of(lease_id))
            if held is not None:
                held.discard(lease_id)
                if not held:
                    del self._held[connection_of(lease_id)]

    def beat(self, lease_ids: list[str]) -> None:
        """Nothing to stamp: the slots of this process live as long as it does."""

    def in_use(self, connection_id: int) -> int:
        with self._lock:
            return len(self._held.get(connection_id, ()))


class Redis:
    """Every process's slots, in Redis (see the module's docstring)."""

    def __init__(self, url: str):
        import redis

        self.client = redis.Redis.from_url(url, socket_connect_timeout=3)
        self.script = self.client.register_script(TAKE)

    @staticmethod
    def key(connection_id) -> str:
        # Named after the database too: connection ids are the database's (two test databases share one Redis).
        return f"pg:gate:slots:{db.connection.settings_dict['NAME']}:{connection_id}"

    @staticmethod
    def expiry(now: float) -> float:
        return now + detached.stale_seconds()

    def take(self, connection_id: int, lease_id: str, limit: int) -> int:
        now = time.time()
        return int(self.script(keys=[self.key(connection_id)], args=[now, limit, lease_id, self.expiry(now)]))

    def give(self, lease_id: str) -> None:
        self.client.zrem(self.key(connection_of(lease_id)), lease_id)

    def beat(self, lease_ids: list[str]) -> None:
        expiry = self.expiry(time.time())
        with self.client.pipeline(transaction=False) as pipe:
            for lease_id in lease_ids:
                key = self.key(connection_of(lease_id))
                pipe.zadd(key, {lease_id: expiry}, xx=True)
                pipe.pexpireat(key, math.ceil(expiry * 1000))
            pipe.execute()

    def in_use(self, connection_id: int) -> int:
        return self.client.zcount(self.key(connection_id), time.time(), "+inf")


_counter: Memory | Redis | None = None
_counter_for: str | None = None


def counter() -> Memory | Redis:
    """The process's counter for the current REDIS_URL (the tests switch settings)."""
    global _counter, _counter_for
    url = settings.REDIS_URL
    if _counter is None or _counter_for != url:
        _counter, _counter_for = (Redis(url) if url else Memory()), url
    return _counter


def forget() -> None:
    """Every slot given back at once (the tests, between two of them: a new database has no leases either)."""
    global _counter
    if isinstance(_counter, Redis):
        keys = _counter.client.keys(_counter.key("*"))
        if keys:
            _counter.client.delete(*keys)
    _counter = None
