"""The test suite's own HTTP servers (fake providers, a fake IdP, file servers), each served by a thread.

`socketserver`'s `serve_forever` looks for a shutdown once per poll, every 0.5 s by default, so each `shutdown()`
waited up to half a second: with a fake provider per test that was minutes of a CI lane spent waiting."""

import threading

POLL_INTERVAL = 0.01


def thread_for(server, name: str | None = None) -> threading.Thread:
    """A daemon thread (not started) that serves `server` until its `shutdown()`."""
    return threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": POLL_INTERVAL}, name=name, daemon=True
    )
