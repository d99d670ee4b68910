"""NUL characters in batch metadata are refused with words before anything reaches the database."""

import pytest

from playground.batches.models import Batch
from tests.batches.conftest import HTMX, local_connection
from tests.batches.test_batches import form

pytestmark = pytest.mark.needs_local_api


def test_nul_in_metadata_is_refused_with_words(alice_http, alice):
    data = form(local_connection(alice), metadata_key=["note"], metadata_value=["a\x00b"])
    response = alice_http.post("/batches/new/", data=data, headers=HTMX)
    assert response.status_code == 400  # refused before the view, by the one input boundary (inputs.py)
    assert response.text.startswith("Metadata value: NUL characters (\\u0000) are not allowed.")
    assert not Batch.objects.filter(owner=alice).exists()
