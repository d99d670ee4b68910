"""Fixtures of the evaluation tests: alice's evaluations on her Local connection, and websockets to the app."""

import asyncio

import pytest
from channels.testing import WebsocketCommunicator

from playground.asgi import application
from playground.connections.models import Connection
from playground.evaluate import runs, services
from playground.evaluate.models import Cell, Run, TestCase
from tests.factories import add_connection

ORIGIN = [(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1")]


def set_template(evaluation, user: str, system: str = ""):
    """The evaluation's template as given: a new version of its library prompt (versions are never updated)."""
    latest = evaluation.latest_prompt()
    if latest and (latest.template, latest.system) == (user, system):
        return latest
    return services.new_version(evaluation, system=system, user=user)


def make_evaluation(owner, *, rows: int = 2, variants: int = 1, user: str = "{{question}}", system: str = ""):
    """An evaluation of `rows` test cases (question = "q<n>", expected = "a<n>") and `variants` columns."""
    # Its Local connection, or (with LOCAL_API=off) a hosted one: these evaluations are run only by tests that
    # need the local API and say so.
    connection = Connection.objects.filter(owner=owner, is_local=True).first() or add_connection(owner)
    evaluation = services.create(user=owner, title="Capitals", connection=connection)
    set_template(evaluation, user, system)
    evaluation.cases.all().delete()
    TestCase.objects.bulk_create(
        [
            TestCase(evaluation=evaluation, position=i, values={"question": f"q{i + 1}"}, expected=f"a{i + 1}")
            for i in range(rows)
        ]
    )
    for _ in range(variants - 1):
        services.add_variant(evaluation)
    return evaluation


def blank_run(evaluation, user=None):
    """A run of the whole grid with every cell empty (as if nothing had been sent yet): tests fill its cells."""
    run, _ = runs.begin(evaluation, user=user or evaluation.owner)
    run.cells.update(status=Cell.EMPTY, heartbeat=None)
    Run.objects.filter(pk=run.pk).update(status=Run.DONE)
    return run


def latest_cells(evaluation):
    """The cells of the evaluation's latest run (a lazy queryset: usable from async tests)."""
    latest = Run.objects.filter(evaluation_id=evaluation.pk).order_by("-number").values("pk")[:1]
    return Cell.objects.filter(run__in=latest)


@pytest.fixture
def evaluation_of(catalog):
    return make_evaluation


async def connect(evaluation_pk, user):
    communicator = WebsocketCommunicator(application, f"/ws/evaluate/{evaluation_pk}/", headers=ORIGIN)
    communicator.scope["user"] = user
    connected, _ = await communicator.connect()
    assert connected
    return communicator


async def receive_until(communicator, kind: str, timeout: float = 60) -> list[dict]:
    """Every event up to and including the first of type `kind`."""
    events = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        event = await communicator.receive_json_from(timeout=max(0.1, deadline - loop.time()))
        events.append(event)
        if event["type"] == kind:
            return events


def statuses(evaluation) -> dict[str, int]:
    counts: dict[str, int] = {}
    for status in latest_cells(evaluation).values_list("status", flat=True):
        counts[status] = counts.get(status, 0) + 1
    return counts
