import time

import httpx

from playground.connections.models import Connection

HTMX = {"HX-Request": "true"}


def local_connection(user) -> Connection:
    return Connection.objects.get(owner=user, team=None, is_local=True)


def wait_for_status(http: httpx.Client, pk: int, statuses: tuple[str, ...], timeout: float = 60) -> str:
    """Poll the refresh view as the page does; return the last row HTML."""
    deadline = time.monotonic() + timeout
    while True:
        html = http.get(f"/batches/{pk}/refresh/", headers=HTMX).text
        if any(f'data-status="{status}"' in html for status in statuses):
            return html
        if time.monotonic() > deadline:
            raise AssertionError(f"batch {pk} never reached {statuses}: {html}")
        time.sleep(0.3)
