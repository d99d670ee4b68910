"""A shared evaluation forks into an editable evaluation of the viewer's: templates, variants, cases and graders,
with the shared results kept as its cells."""

import pytest
from django.test import Client
from django.urls import reverse

from playground.connections.models import ensure_local_connection
from playground.evaluate.models import Cell, Evaluation
from tests.sharing.conftest import ROWS
from tests.sharing.test_evaluation import _share

pytestmark = [pytest.mark.django_db, pytest.mark.needs_local_api]


def test_a_shared_evaluation_forks_into_an_editable_evaluation(alice_client, bob, evaluation):
    share = _share(alice_client, evaluation)
    viewer = Client()
    viewer.force_login(bob)
    assert reverse("sharing:fork", args=[share.token]) in viewer.get(reverse("sharing:view", args=[share.token])).text
    connection = ensure_local_connection(bob)
    response = viewer.post(reverse("sharing:fork", args=[share.token]), {"connection": connection.pk})
    copy = Evaluation.objects.get(owner=bob)
    assert response.status_code == 302 and response["Location"] == reverse("evaluate:detail", args=[copy.pk])
    assert copy.title == "Capitals (fork)" and copy.connection == connection and copy.columns == ["country"]

    prompt = copy.latest_prompt()
    assert (prompt.number, prompt.system, prompt.template) == (1, "Answer briefly.", "Capital of {{country}}?")
    variants = list(copy.variants.all())
    assert [(v.model, v.params, v.graders) for v in variants] == [
        ("local/chat", {"temperature": "0.2"}, {"contains": ""}),
        ("local/chat-lite", {"max_tokens": "64"}, {}),
    ]
    cases = list(copy.cases.all())
    assert [c.values for c in cases] == [{"country": f"Land{n}"} for n in range(ROWS)]
    first = Cell.objects.get(case=cases[0], variant=variants[0])
    assert first.status == Cell.DONE and first.output.startswith("**City0**")
    assert first.run.number == 1 and first.run.started_by == bob and not first.ratings.exists()  # ratings stay
    assert Cell.objects.get(case=cases[1], variant=variants[1]).error == "Timed out on row 1"

    # Editable: the forker's own evaluation page, and the original is untouched and still alice's alone.
    assert viewer.get(reverse("evaluate:detail", args=[copy.pk])).status_code == 200
    assert viewer.get(reverse("evaluate:detail", args=[evaluation.pk])).status_code == 404
    assert Evaluation.objects.filter(owner=evaluation.owner).count() == 1
