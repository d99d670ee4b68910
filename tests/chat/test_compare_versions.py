"""A compare column may be a library prompt version: v1 and v2 of one prompt stream side by side on the same model,
each with its version's system prompt, few-shot turns and parameters; each answer records its version. A version
the user cannot use is refused naming the column, and nothing is started."""

import pytest
from asgiref.sync import sync_to_async
from django.urls import reverse

from playground.chat.models import Message
from playground.prompts.drafts import save_version
from playground.prompts.models import Prompt
from playground.upstream import client
from tests.chat.conftest import finish
from tests.prompts.conftest import draft

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]
HTMX = {"HX-Request": "true"}


@pytest.fixture
def bodies(monkeypatch):
    sent = []
    original = client.chat_stream

    def spy(endpoint, body, headers=None, **options):
        sent.append(body)
        return original(endpoint, body, headers, **options)

    monkeypatch.setattr(client, "chat_stream", spy)
    return sent


def two_versions(owner):
    prompt = Prompt.objects.create(owner=owner, name="Guide")
    v1 = save_version(prompt, draft(owner, system="Answer in one word.", template="{{q}}", params={}), owner)
    shots = [{"role": "user", "content": "Rhine?"}, {"role": "assistant", "content": "A river."}]
    v2 = save_version(
        prompt,
        draft(owner, system="Answer in French.", template="{{q}}", shots=shots, params={"temperature": 0.3}),
        owner,
    )
    return v1, v2


async def test_two_versions_of_one_prompt_stream_side_by_side_and_record_their_version(
    live_server, alice, bob, async_client, make_conversation, bodies
):
    conversation = await sync_to_async(make_conversation)(system_prompt="The panel's own system prompt.")
    v1, v2 = await sync_to_async(two_versions)(alice)
    await async_client.aforce_login(alice)
    url = reverse("chat:compare", args=[conversation.pk])
    fields = {"content": "Name a river.", "model_1": "local/chat", "model_2": "local/chat"}
    response = await async_client.post(url, {**fields, "version_1": v1.pk, "version_2": v2.pk}, headers=HTMX)
    assert response.status_code == 200, response.content
    answers = [m async for m in Message.objects.filter(conversation=conversation, role="assistant").order_by("pk")]
    for answer in answers:
        await finish(answer.pk)
    assert [a.prompt_version_id for a in answers] == [v1.pk, v2.pk]
    assert bodies[0]["messages"] == [
        {"role": "system", "content": "Answer in one word."},
        {"role": "user", "content": "Name a river."},
    ]
    assert bodies[1]["messages"][:3] == [
        {"role": "system", "content": "Answer in French."},
        {"role": "user", "content": "Rhine?"},
        {"role": "assistant", "content": "A river."},
    ]
    assert bodies[1]["temperature"] == 0.3 and bodies[0]["model"] == bodies[1]["model"] == "local/chat"
    assert all(body["stream"] is True for body in bodies)
    assert f'data-version="{v2.pk}">Guide@v2<' in response.content.decode()

    # Bob's prompt is not alice's to use: refused naming the column, nothing started.
    theirs = (await sync_to_async(two_versions)(bob))[0]
    before = await Message.objects.filter(conversation=conversation).acount()
    refused = await async_client.post(url, {**fields, "version_2": theirs.pk}, headers=HTMX)
    assert "columns[2].version: choose a version of a prompt you can use." in refused.content.decode()
    assert await Message.objects.filter(conversation=conversation).acount() == before
