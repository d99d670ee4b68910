"""KaTeX typesets math on every page that shows model output beside the chat: the share pages (a conversation,
live or not, and a batch), a batch's results and an evaluation's grid."""

import pytest
from playwright.sync_api import expect

from playground.batches.models import Batch
from playground.chat.models import Conversation, Message
from playground.connections.models import ensure_local_connection
from playground.evaluate import services
from playground.evaluate.models import Cell, Evaluation, Run, TestCase, Variant
from playground.sharing.freeze import freeze
from playground.sharing.models import Share
from tests.browser.conftest import orm

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]

ANSWER = "The area is $A = \\pi r^2$, and\n\n$$\\int_0^1 x\\,dx = \\tfrac12$$"


def _share(source, **fields) -> Share:
    share = Share(owner=source.owner, title="t", **fields)
    share.source = source
    share.kind = "conversation" if isinstance(source, Conversation) else "batch"
    share.save()
    freeze(share)
    return share


def _pages(alice):
    connection = ensure_local_connection(alice)
    conversation = Conversation.objects.create(owner=alice, connection=connection, model_id="local/chat")
    question = Message.objects.create(conversation=conversation, role="user", content="Area of a circle?")
    Message.objects.create(conversation=conversation, parent=question, role="assistant", content=ANSWER)
    batch = Batch.objects.create(
        owner=alice,
        connection=connection,
        remote_id="fork of batch_1",
        input_filename="math.jsonl",
        request_count=1,
        status="completed",
        request_counts={"total": 1, "completed": 1, "failed": 0},
        usage_recorded=True,
        copy={
            "requests": [{"model": "local/chat", "messages": [{"role": "user", "content": "Area?"}]}],
            "rows": [{"custom_id": "r1", "prompt": "Area?", "answer": ANSWER, "error": "", "tokens": 9}],
        },
    )
    evaluation = Evaluation.objects.create(owner=alice, title="Circles", connection=connection, columns=["shape"])
    services.new_version(evaluation, system="", user="Area of a {{shape}}?")
    variant = Variant.objects.create(evaluation=evaluation, position=0, model="local/chat")
    case = TestCase.objects.create(evaluation=evaluation, position=0, values={"shape": "circle"})
    run = Run.objects.create(evaluation=evaluation, number=1, started_by=alice, status=Run.DONE)
    Cell.objects.create(evaluation=evaluation, run=run, case=case, variant=variant, status=Cell.DONE, output=ANSWER)
    shares = [f"/s/{s.token}/" for s in (_share(conversation), _share(conversation, live=True), _share(batch))]
    return [*shares, f"/batches/{batch.pk}/results/", f"/evaluate/{evaluation.pk}/"]


def test_math_is_typeset_on_share_batch_and_evaluation_pages(alice, alice_page):
    page = alice_page
    refused = []
    page.on("console", lambda m: refused.append(m.text) if "Content Security Policy" in m.text else None)
    for url in orm(_pages, alice):
        page.goto(url)
        expect(page.locator(".math-inline[data-tex] math").first).to_be_attached()
        expect(page.locator(".math-display[data-tex] math").first).to_be_attached()
        assert page.locator(".math-inline").first.get_attribute("data-tex") == "A = \\pi r^2", url
    assert refused == []
