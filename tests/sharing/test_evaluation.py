"""Sharing an evaluation: the frozen grid, its pages, access rules, update, revoke and no secret in it."""

import pytest
from django.test import Client
from django.urls import reverse

from playground.evaluate.models import Cell
from playground.sharing.models import Share
from tests.sharing.conftest import BASE_URL, CONNECTION_NAME, SECRET_KEY_VALUE

pytestmark = [pytest.mark.django_db]


def _share(client, evaluation, **data) -> Share:
    page = client.post(
        reverse("sharing:source", args=["evaluation", evaluation.pk]), {"visibility": "anyone", "expiry": "1d", **data}
    )
    assert page.status_code == 302
    return Share.objects.for_source(evaluation).get()


def test_the_evaluation_page_has_a_share_button(alice_client, evaluation):
    page = alice_client.get(reverse("evaluate:detail", args=[evaluation.pk])).content.decode()
    assert f'href="{reverse("sharing:source", args=["evaluation", evaluation.pk])}"' in page


def test_another_users_evaluation_is_a_404_to_share(bob_client, evaluation):
    url = reverse("sharing:source", args=["evaluation", evaluation.pk])
    assert bob_client.get(url).status_code == 404
    assert bob_client.post(url, {"visibility": "anyone", "expiry": "1d"}).status_code == 404
    assert not Share.objects.exists()


def test_the_shared_grid_is_frozen_paged_and_has_no_secret(alice_client, evaluation):
    share = _share(alice_client, evaluation)
    assert share.kind == "evaluation" and share.title == "Evaluation: Capitals"
    anonymous = Client()
    response = anonymous.get(reverse("sharing:view", args=[share.token]))
    page = response.content.decode()
    assert response.status_code == 200
    assert response["Content-Security-Policy"].startswith("default-src 'none'")
    assert response["X-Robots-Tag"] == "noindex, nofollow" and response["Referrer-Policy"] == "no-referrer"
    assert "Capital of {{country}}?" in page and "Answer briefly." in page
    assert "local/chat-lite" in page and "temperature 0.2" in page and "top_p" not in page
    assert "<strong>City0</strong>" in page and "<script>alert(1)</script>" not in page
    assert "Timed out on row 0" in page and "Land49" in page and "Land50" not in page
    assert "Rows 1–50 of 60, 50 a page" in page
    # The summary covers every row: 30 of the 60 graded answers passed.
    assert "<strong>50%</strong>" in page and "passed (30/60)" in page and "60 errors" in page
    for secret in (SECRET_KEY_VALUE, CONNECTION_NAME, BASE_URL):
        assert secret not in page and secret not in str(share.content)
    second = anonymous.get(reverse("sharing:view", args=[share.token]), {"page": 2}).content.decode()
    assert "Land50" in second and "Land59" in second and "Land49" not in second


def test_update_refreshes_and_revoke_and_delete_end_the_link(alice_client, evaluation):
    share = _share(alice_client, evaluation)
    url = reverse("sharing:view", args=[share.token])
    Cell.objects.filter(evaluation=evaluation, case__position=0, variant__position=0).update(output="Fresh answer")
    assert "Fresh answer" not in Client().get(url).content.decode()
    alice_client.post(reverse("sharing:update", args=[share.pk]))
    assert "Fresh answer" in Client().get(url).content.decode()

    listing = alice_client.get(reverse("sharing:index")).content.decode()
    assert "Evaluation: Capitals" in listing and '<span class="muted small">Evaluation</span>' in listing

    alice_client.post(reverse("sharing:revoke", args=[share.pk]))
    assert Client().get(url).status_code == 404

    again = _share(alice_client, evaluation)
    page = alice_client.get(reverse("evaluate:detail", args=[evaluation.pk])).content.decode()
    assert "Delete this evaluation, its test cases" in page and f"/s/{again.token[:8]}" in page
    assert "1 share link will stop working" in page
    alice_client.post(reverse("evaluate:delete", args=[evaluation.pk]))
    assert not Share.objects.filter(pk=again.pk).exists()
    assert Client().get(reverse("sharing:view", args=[again.token])).status_code == 404


def test_a_running_evaluation_cannot_be_shared_yet(alice_client, evaluation):
    Cell.objects.filter(evaluation=evaluation, case__position=0).update(status=Cell.RUNNING)
    page = alice_client.post(
        reverse("sharing:source", args=["evaluation", evaluation.pk]), {"visibility": "anyone", "expiry": "1d"}
    )
    assert "still running" in page.content.decode()
    assert not Share.objects.exists()


def test_the_shared_grid_says_the_judges_reason_in_words(alice_client, evaluation):
    cell = Cell.objects.get(evaluation=evaluation, case__position=1, variant__position=0)
    reason = "The answer does not mention “Paris”."
    cell.grades = {"judge": {"pass": False, "detail": reason, "model": "local/chat", "prompt_tokens": 40}}
    cell.save(update_fields=["grades"])
    share = _share(alice_client, evaluation)
    page = Client().get(reverse("sharing:view", args=[share.token])).content.decode()
    assert f"local/chat failed it: {reason}" in page.replace("&ldquo;", "“").replace("&rdquo;", "”")
