"""The thread's articles are remembered per process once finished (chat/render_cache.py): a page load must show
the same HTML as rendering each message afresh, whatever changed since the last load."""

import re

import pytest
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone

from playground.chat import branches, panel_views, render_cache, services
from playground.chat.models import Attachment, Message
from playground.chat.relay.display import render_message

pytestmark = [pytest.mark.django_db, pytest.mark.needs_local_api]


def add(conversation, parent, role, content, **fields):
    return branches.add(conversation, parent.pk if parent else None, role=role, content=content, **fields)


def page(client, conversation) -> str:
    response = client.get(reverse("chat:conversation", args=[conversation.pk]))
    assert response.status_code == 200
    return response.content.decode()


def article(html: str, message) -> str:
    start = html.index(f'id="message-{message.pk}"')
    return html[start : html.index("</article>", start)]


@pytest.fixture
def pair(make_conversation):
    conversation = make_conversation()
    question = add(conversation, None, "user", "What is **two** plus two?")
    answer = add(
        conversation, question, "assistant", "It is **four**.", usage={"prompt_tokens": 9, "completion_tokens": 4}
    )
    return conversation, question, answer


def test_an_edited_message_shows_its_new_text_on_the_next_load(alice_client, pair):
    conversation, _question, answer = pair
    assert "It is <strong>four</strong>." in page(alice_client, conversation)
    Message.objects.filter(pk=answer.pk).update(content="It is *4*.")
    html = article(page(alice_client, conversation), answer)
    assert "It is <em>4</em>." in html and "four" not in html


def test_an_answer_that_fails_after_a_load_shows_its_error_and_retry(alice_client, pair):
    conversation, _question, answer = pair
    assert "Retry" not in article(page(alice_client, conversation), answer)
    Message.objects.filter(pk=answer.pk).update(
        status=Message.ERROR, error={"title": "Rate limited", "message": "Too many requests.", "status": 429}
    )
    html = article(page(alice_client, conversation), answer)
    assert 'data-status="error"' in html and "Rate limited" in html and "Too many requests." in html
    assert reverse("chat:retry", args=[conversation.pk, answer.pk]) in html


def test_token_counts_arriving_after_a_load_are_shown(alice_client, pair):
    conversation, _question, answer = pair
    assert "<dt>cached</dt>" not in page(alice_client, conversation)
    Message.objects.filter(pk=answer.pk).update(
        usage={"prompt_tokens": 9, "completion_tokens": 4, "prompt_tokens_details": {"cached_tokens": 8}}
    )
    assert "<dt>cached</dt><dd>8</dd>" in article(page(alice_client, conversation), answer)


def test_switching_a_branch_shows_each_message_at_its_new_place(alice_client, pair):
    conversation, question, answer = pair
    again = add(conversation, question, "assistant", "Four, again.")
    html = page(alice_client, conversation)
    assert "Four, again." in html and 'class="sibling-count mono">2/2<' in article(html, again)
    branches.select(conversation, answer.pk)
    html = page(alice_client, conversation)
    assert "Four, again." not in html
    assert 'class="sibling-count mono">1/2<' in article(html, answer)
    # Back again: the remembered article of the first visit is the right one.
    branches.select(conversation, again.pk)
    assert 'class="sibling-count mono">2/2<' in article(page(alice_client, conversation), again)


def test_a_message_that_gains_a_sibling_shows_its_arrows(alice_client, pair):
    conversation, question, _answer = pair
    assert "sibling-count" not in article(page(alice_client, conversation), question)
    add(conversation, None, "user", "What is two plus three?", selected=False)
    assert 'class="sibling-count mono">1/2<' in article(page(alice_client, conversation), question)


def test_an_attachment_added_after_a_load_is_shown(alice_client, pair):
    conversation, question, _answer = pair
    assert "message-attachments" not in article(page(alice_client, conversation), question)
    Attachment.objects.create(
        message=question, file="chat/1/notes.pdf", kind="pdf", content_type="application/pdf", name="notes.pdf", size=7
    )
    assert "notes.pdf" in article(page(alice_client, conversation), question)


def test_a_tool_call_answered_after_a_load_shows_as_answered(alice_client, pair):
    conversation, _question, answer = pair
    call = {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": '{"city": "Oslo"}'}}
    Message.objects.filter(pk=answer.pk).update(tool_calls=[call])
    assert "Send result" in article(page(alice_client, conversation), answer)
    add(conversation, answer, "tool", '{"temperature": 3}', tool_call_id="call_1")
    html = article(page(alice_client, conversation), answer)
    assert "Answered" in html and "Send result" not in html


def test_a_streaming_answer_is_rendered_afresh_at_each_load(alice_client, pair):
    conversation, question, _answer = pair
    running = add(conversation, question, "assistant", "Fo", status=Message.STREAMING, heartbeat=timezone.now())
    assert render_cache.article_key(running) is None
    html = article(page(alice_client, conversation), running)
    assert "Generating" in html and "Fo" in html
    Message.objects.filter(pk=running.pk).update(content="Four.", status=Message.COMPLETE)
    html = article(page(alice_client, conversation), running)
    assert "Generating" not in html and "Four." in html


def test_every_load_carries_its_own_csrf_token_in_the_remembered_articles(alice_client, pair):
    conversation, _question, answer = pair
    Message.objects.filter(pk=answer.pk).update(status=Message.STOPPED)  # its retry form posts with the token
    for _ in range(2):
        html = page(alice_client, conversation)
        header = re.search(r"hx-headers='\{\"X-CSRFToken\": \"(\w+)\"\}'", html).group(1)
        tokens = re.findall(r'name="csrfmiddlewaretoken" value="(\w+)"', article(html, answer))
        assert tokens and set(tokens) == {header}


def test_a_thread_rendered_without_a_request_has_no_token_inputs(alice_client, pair):
    conversation, _question, answer = pair
    Message.objects.filter(pk=answer.pk).update(status=Message.STOPPED)
    page(alice_client, conversation)
    context = {"conversation": conversation, "thread": branches.thread(conversation), "has_connection": True}
    html = render_to_string("chat/index.html#thread", context)  # as the websocket's branch actions do
    assert f'id="message-{answer.pk}"' in html and "csrfmiddlewaretoken" not in html and "csrf" not in html


def test_a_remembered_article_is_the_html_a_fresh_render_gives(pair):
    conversation, _question, answer = pair
    Message.objects.filter(pk=answer.pk).update(
        params={"n": 2}, choices=["Four, in words."], status=Message.INTERRUPTED, trace_id="trace-7", total_ms=900
    )
    for message in branches.thread(conversation):
        fresh = render_message(message)
        assert render_cache.article(message) == fresh  # rendered, then remembered
        assert render_cache.article(message) == fresh  # from memory


def test_the_remembered_compare_fields_are_a_fresh_render_and_follow_the_model(alice_client, pair):
    """A compare column's parameter fields are kept per model (render_cache.compare_params)."""
    conversation = pair[0]
    model = services.selected_model(conversation)
    for form in panel_views.compare_forms(model):
        fresh = render_to_string("chat/_compare_params.html", {"params": form})
        assert render_cache.compare_params(form, model) == render_cache.compare_params(form, model) == fresh
    assert 'name="c2-top_k"' in page(alice_client, conversation)
    model.top_k = False  # the catalog now says the model takes no top_k: the columns stop offering it
    model.save()
    assert 'name="c2-top_k"' not in page(alice_client, conversation)
