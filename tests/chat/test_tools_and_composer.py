"""The tools editor, tool-result submission through the view, the start page and per-attachment options."""

import json

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from playground.chat import commands, outcomes, services
from playground.chat.forms import Upload
from playground.chat.models import Attachment, Conversation, Message
from playground.connections.models import Connection
from tests.chat.conftest import finish
from tests.chat.test_attachments import png
from tests.localapi.test_chat_media import mp4

pytestmark = [pytest.mark.django_db, pytest.mark.needs_local_api]
HTMX = {"HX-Request": "true"}
WEATHER = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]


def called(conversation, calls=(("call_a", "get_weather"),)) -> Message:
    """A finished answer of `conversation` that called tools (as the generation saves one)."""
    Message.objects.create(conversation=conversation, role="user", content="What's the weather in Paris?")
    return Message.objects.create(
        conversation=conversation,
        role="assistant",
        finish_reason="tool_calls",
        tool_calls=[
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": '{"city":"Paris"}'}}
            for call_id, name in calls
        ],
    )


# ---------------------------------------------------------------- the tools editor


def test_invalid_tools_json_is_kept_with_one_error_naming_line_and_column(alice_client, make_conversation):
    conversation = make_conversation("local/tools", params={"tools": WEATHER})
    broken = '[\n  {"type": "function",\n   "function": {"name": "x"}\n'
    response = alice_client.post(
        reverse("chat:settings", args=[conversation.pk]),
        {"tools": broken, "temperature": "0.3"},
        headers=HTMX,
    )
    html = response.content.decode()
    assert html.count("tools: not valid JSON at line 4, column 1") == 1
    assert json.dumps(broken)[1:-1].replace('\\"', "&quot;").replace("\\n", "\n") in html  # the text as typed
    conversation.refresh_from_db()
    # The saved tools stay; the other settings of the same post are saved.
    assert conversation.params["tools"] == WEATHER and conversation.params["temperature"] == 0.3

    fixed = json.dumps([*WEATHER, {"type": "function", "function": {"name": "get_time"}}])
    html = alice_client.post(reverse("chat:settings", args=[conversation.pk]), {"tools": fixed}, headers=HTMX)
    assert "not valid JSON" not in html.content.decode()
    conversation.refresh_from_db()
    assert [t["function"]["name"] for t in conversation.params["tools"]] == ["get_weather", "get_time"]


def test_tools_are_copied_from_another_of_the_users_conversations_only(alice_client, bob, make_conversation, alice):
    source = make_conversation("local/tools", title="Weather bot", params={"tools": WEATHER})
    target = make_conversation("local/tools")
    page = alice_client.get(reverse("chat:conversation", args=[target.pk])).content.decode()
    assert f'<option value="{source.pk}">Weather bot (1)</option>' in page
    response = alice_client.post(reverse("chat:copy_tools", args=[target.pk]), {"source": source.pk}, headers=HTMX)
    assert response.status_code == 200
    target.refresh_from_db()
    assert target.params["tools"] == WEATHER

    bobs = make_conversation(
        "local/tools", owner=bob, params={"tools": [{"type": "function", "function": {"name": "b"}}]}
    )
    response = alice_client.post(reverse("chat:copy_tools", args=[target.pk]), {"source": bobs.pk}, headers=HTMX)
    assert response.status_code == 404
    target.refresh_from_db()
    assert target.params["tools"] == WEATHER


# ---------------------------------------------------------------- tool results through the view


def test_the_tool_call_card_has_a_result_box_and_the_composer_waits_for_it(alice_client, make_conversation):
    conversation = make_conversation("local/tools", params={"tools": WEATHER})
    answer = called(conversation)
    page = alice_client.get(reverse("chat:conversation", args=[conversation.pk])).content.decode()
    assert '<span class="tool-name mono">get_weather</span>' in page and "call_a" in page
    assert "{\n  &quot;city&quot;: &quot;Paris&quot;\n}" in page  # pretty-printed arguments
    assert 'name="result:call_a"' in page
    assert reverse("chat:tool_results", args=[conversation.pk, answer.pk]) in page

    # A typed message would send two user turns in a row: it is refused, naming the call to answer.
    response = alice_client.post(reverse("chat:send", args=[conversation.pk]), {"content": "18 C"}, headers=HTMX)
    assert "The last answer called get_weather (call_a)" in response.content.decode()
    assert conversation.messages.count() == 2


def test_an_empty_result_is_refused_and_what_was_typed_stays(alice_client, make_conversation):
    conversation = make_conversation("local/tools", params={"tools": WEATHER})
    answer = called(conversation, [("call_a", "get_weather"), ("call_b", "get_time")])
    response = alice_client.post(
        reverse("chat:tool_results", args=[conversation.pk, answer.pk]),
        {"result:call_a": "18 C", "result:call_b": " "},
        headers=HTMX,
    )
    html = response.content.decode()
    assert response.status_code == 200
    assert "Result of get_time (call_b): empty; write what the tool returned." in html
    assert ">18 C</textarea>" in html
    assert not conversation.messages.filter(role="tool").exists()


def test_bob_cannot_answer_alices_tool_calls(bob_client, bob, make_conversation):
    conversation = make_conversation("local/tools")
    answer = called(conversation)
    response = bob_client.post(
        reverse("chat:tool_results", args=[conversation.pk, answer.pk]), {"result:call_a": "x"}, headers=HTMX
    )
    assert response.status_code == 404
    outcome = async_to_sync(commands.tool_results)(bob, conversation.pk, answer.pk, {"call_a": "x"})
    assert (outcome.kind, outcome.status) == (outcomes.REFUSED, 404)  # the command's one ownership check
    assert not conversation.messages.filter(role="tool").exists()


@pytest.mark.django_db(transaction=True)
async def test_results_posted_from_the_cards_continue_the_turn(live_server, alice, async_client, make_conversation):
    conversation = await sync_to_async(make_conversation)("local/tools", params={"tools": WEATHER})
    answer = await sync_to_async(called)(conversation)
    await async_client.aforce_login(alice)
    response = await async_client.post(
        reverse("chat:tool_results", args=[conversation.pk, answer.pk]),
        {"result:call_a": '{"temperature": 18}'},
        headers=HTMX,
    )
    html = response.content.decode()
    # The answer (its card now answered, without a box), the tool message and the new answer's placeholder.
    assert html.count("<article") == 3 and 'name="result:call_a"' not in html and "Answered" in html
    assert 'data-role="tool"' in html and 'data-status="streaming"' in html
    final = await Message.objects.filter(conversation=conversation, role="assistant").alast()
    final = await finish(final.pk)
    assert final.status == "complete", final.error
    roles = [m async for m in conversation.messages.values_list("role", flat=True)]
    assert roles == ["user", "assistant", "tool", "assistant"]


# ---------------------------------------------------------------- the start page


def test_a_new_chat_starts_with_the_model_and_connection_last_used(alice_client, alice, make_conversation):
    page = alice_client.get(reverse("chat:index")).content.decode()
    assert 'id="start-model"' in page and 'name="attachments"' in page
    older = make_conversation("local/vision")
    latest = make_conversation("local/reasoner")
    Conversation.objects.filter(pk=older.pk).update(model_id="local/vision")
    latest.save()  # the latest used
    page = alice_client.get(reverse("chat:index")).content.decode()
    assert '<option value="local/reasoner" selected>' in page
    local = Connection.objects.get(owner=alice, is_local=True)
    assert f'<option value="{local.pk}" selected>' in page
    assert not Conversation.objects.filter(owner=alice).exclude(pk__in=[older.pk, latest.pk]).exists()


def test_the_start_picker_follows_the_chosen_model_and_its_files(alice_client, alice):
    local = Connection.objects.get(owner=alice, is_local=True)
    html = alice_client.get(reverse("chat:start_picker"), {"connection": local.pk, "model": "local/vision"})
    html = html.content.decode()
    assert '<option value="local/vision" selected>' in html and 'data-attach-accept="image/png' in html
    html = alice_client.get(reverse("chat:start_picker"), {"connection": local.pk, "model": "local/chat"})
    assert 'data-attach-accept=""' in html.content.decode()


@pytest.mark.django_db(transaction=True)
async def test_the_first_message_picks_the_model_and_carries_a_file(
    live_server, alice, async_client, settings, tmp_path
):
    settings.MEDIA_ROOT = tmp_path
    await async_client.aforce_login(alice)
    local = await Connection.objects.aget(owner=alice, is_local=True)
    image = SimpleUploadedFile("dot.png", png(), content_type="image/png")
    response = await async_client.post(
        reverse("chat:create"),
        {
            "content": "what is this?",
            "connection": local.pk,
            "model": "local/vision",
            "attachments": [image],
            "attachment_options": json.dumps([{"detail": "low"}]),
        },
        headers=HTMX,
    )
    conversation = await Conversation.objects.aget(owner=alice)
    assert response.headers["HX-Redirect"] == reverse("chat:conversation", args=[conversation.pk])
    assert conversation.model_id == "local/vision" and conversation.connection_id == local.pk
    attachment = await Attachment.objects.aget(message__conversation=conversation)
    assert attachment.options == {"detail": "low"}
    answer = await Message.objects.aget(conversation=conversation, role="assistant")
    answer = await finish(answer.pk)
    assert answer.status == "complete", answer.error


# ---------------------------------------------------------------- attachment options


def test_video_fps_max_frams_and_detail_go_in_the_part(make_conversation, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    conversation = make_conversation("local/omni")
    video = mp4(seconds=1)
    clip = Upload("video", "video/mp4", "clip.mp4", len(video), video, {"fps": 2, "max_frams": 5, "detail": "high"})
    image = png()
    picture = Upload("image", "image/png", "dot.png", len(image), image, {"detail": "low"})
    turn = services.prepare_turn(conversation, "describe", attachments=[clip, picture])
    video_part, image_part = turn.request.body["messages"][0]["content"][1:]
    assert video_part["type"] == "video_url"
    assert {k: v for k, v in video_part["video_url"].items() if k != "url"} == {
        "detail": "high",
        "fps": 2,
        "max_frams": 5,
    }
    assert image_part["image_url"]["detail"] == "low" and set(image_part["image_url"]) == {"url", "detail"}
    # Saved with the attachment, so later turns send the same part.
    assert sorted(a.options.get("fps", 0) for a in Attachment.objects.filter(message=turn.user_message)) == [0, 2]
    Message.objects.filter(pk=turn.assistant.pk).update(status="complete", content="A clip and a dot.")
    later = services.prepare_turn(conversation, "again")
    assert later.request.body["messages"][0]["content"][1]["video_url"]["max_frams"] == 5


def test_bad_attachment_options_are_refused_naming_the_field_and_the_limit(alice_client, make_conversation):
    conversation = make_conversation("local/omni")
    video = SimpleUploadedFile("clip.mp4", mp4(seconds=1), content_type="video/mp4")
    response = alice_client.post(
        reverse("chat:send", args=[conversation.pk]),
        {"content": "describe", "attachments": [video], "attachment_options": json.dumps([{"fps": 500}])},
        headers=HTMX,
    )
    assert "attachments[0] (clip.mp4).fps: 500 is out of range; allowed 1 to 60." in response.content.decode()
    assert not conversation.messages.exists()


@pytest.mark.django_db(transaction=True)
async def test_the_local_api_accepts_the_video_options(live_server, alice, make_conversation, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    conversation = await sync_to_async(make_conversation)("local/omni")
    video = mp4(seconds=2)
    clip = Upload("video", "video/mp4", "clip.mp4", len(video), video, {"fps": 1, "max_frams": 1})
    turn = await services.send(conversation, "describe", attachments=[clip])
    answer = await finish(turn.assistant.pk)
    assert answer.status == "complete", answer.error
    assert "1 frame" in answer.content


def test_a_second_submit_shows_that_nothing_waits_any_more(alice_client, make_conversation):
    conversation = make_conversation("local/tools")
    answer = called(conversation)
    Message.objects.create(conversation=conversation, role="tool", tool_call_id="call_a", content="18 C")
    response = alice_client.post(
        reverse("chat:tool_results", args=[conversation.pk, answer.pk]), {"result:call_a": "19 C"}, headers=HTMX
    )
    html = response.content.decode()
    # 200, so htmx swaps it in: the card shows the call answered, with the reason and no box.
    assert response.status_code == 200 and "no longer waiting for results" in html
    assert 'name="result:call_a"' not in html and "Answered" in html
    assert conversation.messages.filter(role="tool").count() == 1


def test_a_stopped_answer_with_calls_does_not_hold_the_composer(alice_client, make_conversation):
    conversation = make_conversation("local/tools")
    answer = called(conversation)
    Message.objects.filter(pk=answer.pk).update(status=Message.STOPPED)
    assert services.pending_calls(conversation) == (None, [])
    page = alice_client.get(reverse("chat:conversation", args=[conversation.pk])).content.decode()
    assert '<span class="tool-name mono">get_weather</span>' in page and 'name="result:call_a"' not in page
    # The request leaves the unanswered calls out (and the answer, which has no text).
    body = services.preview_request(conversation, "go on").body
    assert [m["role"] for m in body["messages"]] == ["user", "user"]


def test_export_and_import_keep_the_tool_call_ids(alice, make_conversation):
    from playground.chat.sharing import transfer

    conversation = make_conversation("local/tools", params={"tools": WEATHER})
    called(conversation)
    Message.objects.create(conversation=conversation, role="tool", tool_call_id="call_a", content="18 C")
    data = transfer.export_json(conversation)
    assert data["messages"][1]["tool_calls"][0]["id"] == "call_a"
    assert {k: data["messages"][2][k] for k in ("role", "tool_call_id", "content")} == {
        "role": "tool",
        "tool_call_id": "call_a",
        "content": "18 C",
    }
    copy = transfer.create(transfer.parse(json.dumps(data)), alice, conversation.connection)
    assert list(copy.messages.values_list("role", "tool_call_id")) == [
        ("user", ""),
        ("assistant", ""),
        ("tool", "call_a"),
    ]
    assert services.preview_request(copy, "thanks").body["messages"][2] == {
        "role": "tool",
        "tool_call_id": "call_a",
        "content": "18 C",
    }
