"""Operators' tests use the fault tests' live daphne processes (each test's own, stopped at its end), and a fleet of
daphne processes behind Debian's HAProxy (tests/operations/balancer.py) started with the test module's `SERVER`
environment."""

import os

import pytest

from tests.faults.conftest import servers  # noqa: F401
from tests.operations.balancer import Fleet, start_balancer


@pytest.fixture
def fleet(request, tmp_path):
    fleet = Fleet(tmp_path, getattr(request.module, "SERVER", {}))
    try:
        fleet.start(2)
        yield fleet
    finally:
        fleet.stop()
        if os.environ.get("SHOW_SERVER_LOG"):
            for i in range(len(fleet.ports)):
                print(fleet.log(i))


@pytest.fixture
def balancer(fleet, tmp_path):
    balancer = start_balancer(fleet.ports, tmp_path / "haproxy.log")
    try:
        balancer.wait_up("web1")
        balancer.wait_up("web2")
        yield balancer
    finally:
        balancer.process.terminate()
        balancer.process.wait(timeout=10)
