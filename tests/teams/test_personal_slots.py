"""A personal connection's slots (connections/slots.py), counted with no database row: in this process without
REDIS_URL, in Redis with it. The limit holds under concurrent opens, every way a request ends gives its slot
back, and a slot whose process died (in Redis) stops counting once it is stale."""

import threading
import time

import pytest
from asgiref.sync import sync_to_async
from django.conf import settings as django_settings
from django.db import connections

from playground.connections import gate, slots
from playground.connections.models import Connection, Lease
from playground.lib import detached
from playground.upstream.errors import UpstreamError

pytestmark = pytest.mark.django_db(transaction=True)

BACKENDS = [
    "memory",
    pytest.param("redis", marks=pytest.mark.skipif(not django_settings.REDIS_URL, reason="REDIS_URL")),
]


@pytest.fixture(params=BACKENDS)
def counting(request, settings):
    """The counter under test (emptied before and after each test by tests/conftest.py's fresh_slots)."""
    settings.REDIS_URL = django_settings.REDIS_URL if request.param == "redis" else ""
    slots.counter()
    yield request.param


@pytest.fixture
def personal(alice):
    connection = Connection(owner=alice, name="Mine", base_url="https://api.example.com/v1", concurrency=3)
    connection.set_key("sk-mine")
    connection.save()
    return connection


def in_use(connection) -> int:
    return slots.counter().in_use(connection.pk)


def test_the_limit_holds_under_concurrent_opens(counting, personal, alice):
    taken, refused, start = [], [], threading.Barrier(12)

    def one():
        start.wait()
        try:
            taken.append(gate.open(personal, alice, "chat"))
        except gate.Refused as refusal:
            refused.append(refusal)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=one) for _ in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(taken) == 3 and len(refused) == 9 and in_use(personal) == 3
    assert all(r.reason == "busy" and (r.in_use, r.limit) == (3, 3) for r in refused)
    assert not Lease.objects.exists()  # no row for a personal connection
    for ticket in taken:
        ticket.release()
    assert in_use(personal) == 0


async def test_every_end_gives_the_slot_back(counting, personal, alice):
    settled = await gate.aopen(personal, alice, "chat")
    await settled.asettle(usage={"prompt_tokens": 3}, model="m")
    released = await gate.aopen(personal, alice, "chat")
    await released.arelease()
    ended = [settled, released]
    with pytest.raises(UpstreamError):
        async with gate.opened(personal, alice, "chat") as ticket:
            ended.append(ticket)
            raise UpstreamError(kind="http", status=500, message="boom")
    with pytest.raises(RuntimeError):
        async with gate.opened(personal, alice, "chat") as ticket:
            ended.append(ticket)
            raise RuntimeError("the caller failed")
    assert await sync_to_async(in_use)(personal) == 0
    assert [detached.get(gate.KIND, ticket.lease_id) for ticket in ended] == [None] * 4
    held = [await gate.aopen(personal, alice, "chat") for _ in range(3)]  # all three are free again
    for ticket in held:
        await ticket.arelease()
        await ticket.arelease()  # ending twice gives nothing back twice
    assert await sync_to_async(in_use)(personal) == 0


def test_a_refusal_before_the_slot_takes_none(counting, personal, bob):
    with pytest.raises(gate.Refused) as refusal:
        gate.open(personal, bob, "chat")
    assert refusal.value.reason == "member" and in_use(personal) == 0


@pytest.mark.parametrize("counting", BACKENDS[1:], indirect=True)  # in memory, a process's slots die with it
def test_a_slot_whose_process_died_expires_in_redis(counting, personal, alice, settings):
    settings.BACKGROUND_STALE_SECONDS = 1
    dead = gate.open(personal, alice, "chat")
    detached.untrack(gate.KIND, dead.lease_id, dead)  # its process stopped stamping it
    alive = gate.open(personal, alice, "chat")
    time.sleep(0.6)
    gate.beat(detached.keys(gate.KIND))  # the heartbeat of the living process
    time.sleep(0.6)
    assert in_use(personal) == 1  # the dead one expired, the stamped one counts
    held = [gate.open(personal, alice, "chat") for _ in range(2)]
    with pytest.raises(gate.Refused):
        gate.open(personal, alice, "chat")
    for ticket in (alive, *held):
        ticket.release()
