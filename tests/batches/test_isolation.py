import pytest
from django.urls import reverse

from playground.batches.models import Batch
from tests.batches.conftest import HTMX, local_connection

pytestmark = [pytest.mark.django_db, pytest.mark.needs_local_api]


def alices_batch(alice) -> Batch:
    return Batch.objects.create(
        owner=alice,
        connection=local_connection(alice),
        remote_id="batch_alices",
        input_file_id="file-alices",
        input_filename="alice-secret-plans.jsonl",
        request_count=2,
        status="completed",
        output_file_id="file-out",
        error_file_id="file-err",
        data={"id": "batch_alices", "status": "completed"},
    )


@pytest.mark.parametrize(
    ("method", "name", "args"),
    [
        ("get", "batches:refresh", []),
        ("post", "batches:cancel", []),
        ("get", "batches:results", []),
        ("get", "batches:download", ["output"]),
        ("get", "batches:download", ["errors"]),
    ],
)
def test_another_users_batch_is_a_404(client, alice, bob, method, name, args):
    batch = alices_batch(alice)
    client.force_login(bob)
    response = getattr(client, method)(reverse(name, args=[batch.pk, *args]), headers=HTMX)
    assert response.status_code == 404
    batch.refresh_from_db()
    assert batch.status == "completed"


def test_the_list_shows_only_your_batches(client, alice, bob):
    alices_batch(alice)
    client.force_login(bob)
    page = client.get(reverse("batches:index")).content.decode()
    assert "batch_alices" not in page and "alice-secret-plans" not in page
    assert "No batches yet" in page


def test_bob_cannot_send_a_batch_through_alices_connection(client, alice, bob):
    client.force_login(bob)
    data = {
        "connection": local_connection(alice).pk,
        "source": "prompts",
        "model": "local/chat",
        "prompts": "hi",
        "completion_window": "24h",
    }
    page = client.post(reverse("batches:create"), data, headers=HTMX).content.decode()
    assert "Select a valid choice" in page
    assert not Batch.objects.exists()


def test_a_file_the_batch_does_not_have_is_a_404(client, alice):
    batch = alices_batch(alice)
    batch.error_file_id = ""
    batch.save()
    client.force_login(alice)
    assert client.get(reverse("batches:download", args=[batch.pk, "errors"])).status_code == 404
    assert client.get(reverse("batches:download", args=[batch.pk, "anything"])).status_code == 404


def test_a_finished_batch_is_not_fetched_again_and_stops_polling(client, alice):
    batch = alices_batch(alice)
    client.force_login(alice)
    response = client.get(reverse("batches:refresh", args=[batch.pk]), headers=HTMX)
    html = response.content.decode()
    assert 'data-status="completed"' in html
    assert "hx-trigger" not in html
