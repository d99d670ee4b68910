"""A busy process is not an unready one (playground/health.py): a check that is only slow still counts as ok for a
few seconds after its last answer, so a process carrying its draining sibling's load stays behind the balancer; a
check that never answered, or fails, or stays slow past the grace, makes the process unready."""

import asyncio
import threading
import time

import pytest

from playground import health


@pytest.fixture(autouse=True)
def quick(settings, monkeypatch):
    settings.HEALTH_TIMEOUT = 0.05
    monkeypatch.setattr(health, "_answered", {})


async def fast():
    return None


async def slow():
    await asyncio.sleep(1)


async def failing():
    raise ConnectionError("refused")


async def test_a_slow_check_that_just_answered_is_ok_and_one_that_never_did_is_not():
    assert await health._run("database", slow) == ("database", "no answer within 0.05 s")
    assert await health._run("database", fast) == ("database", "ok")
    assert await health._run("database", slow) == ("database", "ok")


async def test_a_slow_check_past_the_grace_is_unready(monkeypatch):
    assert await health._run("database", fast) == ("database", "ok")
    monkeypatch.setitem(health._answered, "database", time.monotonic() - health.SLOW_GRACE - 0.1)
    assert await health._run("database", slow) == ("database", "no answer within 0.05 s")


async def test_an_error_is_unready_at_once_and_forgets_the_last_answer():
    assert await health._run("channel_layer", fast) == ("channel_layer", "ok")
    assert await health._run("channel_layer", failing) == ("channel_layer", "unreachable (ConnectionError)")
    assert await health._run("channel_layer", slow) == ("channel_layer", "no answer within 0.05 s")


def test_blocking_checks_run_on_the_probes_own_threads(monkeypatch):
    seen = []
    monkeypatch.setattr(health, "_database", lambda: seen.append(threading.current_thread().name))
    asyncio.run(health._run("database", health._database))
    assert seen and seen[0].startswith("health")


@pytest.mark.django_db
def test_a_pool_whose_every_slot_is_taken_leaves_the_database_and_key_checks_answering(settings):
    """The survivor of a rolling restart holds every slot with its sibling's answers: its probe still answers at once
    (it was taken out of the balancer with the draining sibling, leaving none, when the probe waited for a slot)."""
    from django.db import connection
    from psycopg_pool import PoolTimeout

    pool = getattr(connection, "pool", None)  # PostgreSQL's backend only
    if pool is None:
        pytest.skip("needs PostgreSQL with the connection pool (DATABASE_URL, PLAYGROUND_DB_POOL > 0)")
    settings.HEALTH_TIMEOUT = 2
    pool.open()
    held = []
    try:
        while True:
            held.append(pool.getconn(timeout=0.2))
    except PoolTimeout:
        pass
    try:
        assert held  # and the pool had no slot left for one more (PoolTimeout)
        for name, check in (("database", health._database), ("encryption", health._encryption)):
            started = time.monotonic()
            assert asyncio.run(health._run(name, check)) == (name, "ok")
            assert time.monotonic() - started < 1
    finally:
        for held_connection in held:
            pool.putconn(held_connection)
