"""Operators' tests use the fault tests' live daphne processes (each test's own, stopped at its end)."""

from tests.faults.conftest import servers  # noqa: F401
