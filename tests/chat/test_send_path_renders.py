"""A send over the socket renders nothing for the tab that asked (issue 36, items 1 and 2): its `sent` reply and
the turn's `start` carry the turn as data, from which the page builds the question and the answer's placeholder
(chat/prototypes.py, static/js/chat/articles.js); its `done` carries the server's render of the last words and the
footer's rows instead of the article, which the page finishes itself. Templates rendered are counted with Django's
test signal (every render in this process: the socket's consumer runs in it)."""

import time

import pytest
from asgiref.sync import sync_to_async
from django.test.signals import template_rendered

from playground.chat.models import Message
from playground.chat.relay.display import render_message
from playground.lib.markdown.rendering import render_markdown
from tests.chat.conftest import connect, finish

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]


class Renders:
    """Every template rendered in this process while it listens, with when."""

    def __init__(self):
        self.seen: list[tuple[float, str]] = []

    def __call__(self, sender, template, context, **kwargs):
        self.seen.append((time.monotonic(), template.name or "?"))

    def __enter__(self):
        template_rendered.connect(self)
        return self

    def __exit__(self, *exc):
        template_rendered.disconnect(self)

    def before(self, moment: float) -> list[str]:
        return [name for at, name in self.seen if at <= moment]


async def send_and_follow(ws, content: str):
    """The socket's send, then its events: (the reply, the deltas, the done event, when the first delta came)."""
    await ws.send_json_to({"action": "send", "id": "r1", "content": content})
    first_delta, reply, deltas = None, None, []
    while True:
        event = await ws.receive_json_from(timeout=30)
        if event["type"] == "delta":
            first_delta = first_delta or time.monotonic()
            deltas.append(event)
        elif event.get("id") == "r1":
            reply = event
            assert reply["type"] == "sent", reply
        elif event["type"] in ("done", "error"):
            assert reply is not None and event["message_id"] == reply["message_id"]
            return reply, deltas, event, first_delta


async def test_a_send_over_the_socket_renders_no_template_for_the_tab_that_asked(live_server, alice, make_conversation):
    conversation = await sync_to_async(make_conversation)()
    ws = await connect(conversation.pk, alice)
    with Renders() as renders:
        reply, deltas, _, first_delta = await send_and_follow(ws, "write 40 words about rain")
        message = await finish(reply["message_id"])
    await ws.disconnect()
    assert deltas and message.status == Message.COMPLETE
    assert renders.before(first_delta) == [], "a template was rendered on the send path before the first delta"
    assert renders.seen == [], "a template was rendered for the asking tab's turn"
    assert "html" not in reply and reply["placeholder"] == {
        "question": {"id": message.parent_id, "content": "write 40 words about rain", "root": True},
        "answer": {"id": message.pk, "model": message.model_id},
    }


async def test_the_done_of_a_complete_answer_carries_its_last_words_and_footer_not_the_article(
    live_server, alice, make_conversation
):
    conversation = await sync_to_async(make_conversation)()
    ws = await connect(conversation.pk, alice)
    reply, deltas, done, _ = await send_and_follow(ws, "write 150 words about rivers")
    message = await finish(reply["message_id"])
    await ws.disconnect()
    assert done["type"] == "done" and done["status"] == Message.COMPLETE and done["seq"] == message.seq
    assert "html" not in done, "the done of an answer the tab watched carries the whole article"
    # What the page shows at the end, the deltas' blocks and the last words, is the saved answer's render.
    shown = "".join(block for delta in deltas for block in delta["blocks"]) + "".join(done["last"])
    assert shown == render_markdown(message.content) == message.html
    # The footer's rows are the ones the saved article shows.
    article = await sync_to_async(render_message)(message)
    footer = done["meta"]["footer"]
    assert footer["rows"] and all(f"<dt>{term}</dt><dd>{value}</dd>" in article for term, value, _ in footer["rows"])
    assert done["meta"]["copy"] is True


async def test_an_answer_that_failed_still_ends_with_its_rendered_article(live_server, alice, make_conversation):
    conversation = await sync_to_async(make_conversation)()
    ws = await connect(conversation.pk, alice)
    reply, _, done, _ = await send_and_follow(ws, "write 300 words about rivers [fault:drop-after-3]")
    await finish(reply["message_id"])
    await ws.disconnect()
    assert done["type"] == "error" and 'data-status="error"' in done["html"]


async def test_a_turn_the_page_cannot_build_comes_rendered(live_server, alice, make_conversation):
    """n > 1: the placeholder has a tab for each choice, which the prototypes do not: the reply carries the
    rendered articles, as before."""
    conversation = await sync_to_async(make_conversation)()
    ws = await connect(conversation.pk, alice)
    await ws.send_json_to({"action": "send", "id": "n2", "content": "Two please", "n": "2"})
    while (reply := await ws.receive_json_from(timeout=30)).get("id") != "n2":
        pass
    assert reply["type"] == "sent" and "placeholder" not in reply
    assert reply["html"].count("<article") == 2 and "Choice 2" in reply["html"]
    await finish(reply["message_id"])
    await ws.disconnect()
