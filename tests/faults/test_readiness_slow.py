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
