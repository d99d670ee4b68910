"""Compare's per-column parameters are the panel's own fields (catalog/params.py), checked against each column's
model and sent to each provider; a field out of bounds is refused naming the column and the field."""

import io

import pytest
from asgiref.sync import sync_to_async
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from PIL import Image

from playground.chat.services import compare
from playground.chat.services.branches import Refused
from tests.chat.conftest import connect, finish
from tests.providers.test_compare import QUESTION, events_until_done, new_conversation

pytestmark = pytest.mark.django_db(transaction=True)


def test_fields_are_read_per_column_and_only_when_set():
    posted = {"c2-temperature": "0.2", "c2-max_tokens": " ", "c1-seed": "3", "c2-stream": "false", "c2-n": "2"}
    assert compare.fields_of(posted.get, 2) == {"temperature": "0.2"}
    assert compare.fields_of(posted.get, 1) == {"seed": "3"}


async def test_a_columns_fields_reach_the_provider_and_bad_ones_are_refused_by_name(provider):
    conversation = await sync_to_async(new_conversation)(provider)
    columns = [
        {"model": provider.chat_model},
        {"model": provider.chat_model, "fields": {"temperature": "0.2", "max_tokens": "40"}},
    ]
    ws = await connect(conversation.pk, conversation.owner)
    turns = await compare.start(conversation, {"content": QUESTION, "columns": columns})
    await events_until_done(ws, {turn.assistant.pk for turn in turns})
    await ws.disconnect()
    first, second = [await finish(turn.assistant.pk) for turn in turns]
    assert second.params["temperature"] == 0.2 and second.params["max_tokens"] == 40
    assert "temperature" not in first.params and "max_tokens" not in first.params
    if provider.fake is not None:
        sent = [b for b in provider.fake.state.bodies("/chat/completions") if b.get("max_tokens") == 40]
        assert len(sent) == 1 and sent[0]["temperature"] == 0.2

    bad = [{"model": provider.chat_model}, {"model": provider.chat_model, "fields": {"temperature": "9"}}]
    with pytest.raises(Refused, match=r"columns\[2\]: temperature"):
        await compare.start(conversation, {"content": "again", "columns": bad})


def png_bytes() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (8, 6), (200, 30, 30)).save(out, "PNG")
    return out.getvalue()


def test_a_picture_no_column_can_take_is_refused_in_words_and_nothing_starts(provider):
    """The fake provider's models declare no vision (its /models lists no capabilities): the comparison says so."""
    conversation = new_conversation(provider)
    client = Client()
    client.force_login(conversation.owner)
    picture = SimpleUploadedFile("red.png", png_bytes(), content_type="image/png")
    response = client.post(
        f"/c/{conversation.pk}/compare/",
        {
            "content": "What is this?",
            "model_1": provider.chat_model,
            "model_2": provider.chat_model,
            "attachments": [picture],
        },
        headers={"HX-Request": "true"},
    )
    assert response.status_code == 400
    assert response.text == f"attachments: {provider.chat_model} does not accept images; choose a vision model."
    assert not conversation.messages.exists()
