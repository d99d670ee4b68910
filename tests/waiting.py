"""Waiting on state in tests: poll a condition until it holds, with a deadline, instead of sleeping a fixed time.

The timeout is a bound against hanging, never a timing assertion: a test waits for what it needs and goes on as
soon as it holds, so a slow machine only makes it slower, not red.
"""

import asyncio
import inspect
import time


def wait_for(predicate, *, timeout: float = 10, what: str = "the condition", every: float = 0.05):
    """Poll until `predicate()` is truthy and return that value; AssertionError naming `what` after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what} after {timeout:g} s")
        time.sleep(every)


async def until(predicate, *, timeout: float = 10, what: str = "the condition", every: float = 0.05):
    """`wait_for` in an event loop: `predicate()` may be a plain function or a coroutine function."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what} after {timeout:g} s")
        await asyncio.sleep(every)
