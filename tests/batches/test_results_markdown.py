"""Batch answers are shown as sanitized markdown, with the raw text one click away."""

import pytest

from playground.batches.models import TERMINAL, Batch
from tests.batches.conftest import HTMX, local_connection, wait_for_status
from tests.batches.test_batches import form, row_of

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]

ANSWER = "Some **bold** and `code` <script>alert(1)</script> [x](javascript:alert(2))"


def test_answers_render_as_sanitized_markdown_with_a_raw_toggle(alice_http, alice):
    data = form(local_connection(alice), prompts=f"Reply [say:{ANSWER}]")
    assert alice_http.post("/batches/new/", data=data, headers=HTMX).status_code == 200
    batch = Batch.objects.get(owner=alice)
    wait_for_status(alice_http, batch.pk, TERMINAL)
    row = row_of(alice_http.get(f"/batches/{batch.pk}/results/").text, "request-1")
    answer = row.split('<div class="answer markdown">', 1)[1].split("</div>", 1)[0]
    assert "<strong>bold</strong>" in answer and "<code>code</code>" in answer
    assert "<script" not in answer and "href=" not in answer
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in answer
    raw = row.split('<pre class="answer-raw">', 1)[1].split("</pre>", 1)[0]
    assert "<summary>Raw</summary>" in row
    assert raw.startswith("Some **bold** and `code` &lt;script&gt;")
