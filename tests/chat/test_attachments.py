"""Attachments: what may be sent to which model, the content parts that go upstream, and who may see the files."""

import base64
import io

import pytest
from asgiref.sync import sync_to_async
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from PIL import Image

from playground.chat import services
from playground.chat.forms import Upload
from playground.chat.models import Attachment, Message
from tests.chat.conftest import finish
from tests.factories import wav

pytestmark = [pytest.mark.django_db, pytest.mark.needs_local_api]


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    return tmp_path


def png(width=64, height=48, colour=(30, 60, 220)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), colour).save(buffer, "PNG")
    return buffer.getvalue()


def pdf() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (100, 140), (255, 255, 255)).save(buffer, "PDF")
    return buffer.getvalue()


def upload(name, data, content_type) -> Upload:
    kind = {"image/png": "image", "application/pdf": "pdf", "audio/wav": "audio"}[content_type]
    return Upload(kind=kind, content_type=content_type, name=name, size=len(data), data=data)


def post_files(client, conversation, files, content="what is this?"):
    return client.post(
        reverse("chat:send", args=[conversation.pk]),
        {"content": content, "attachments": files},
        headers={"HX-Request": "true"},
    )


def data_uri(content_type, data) -> str:
    return f"data:{content_type};base64,{base64.b64encode(data).decode()}"


# ---------------------------------------------------------------- validation


def test_a_model_that_takes_no_images_refuses_them_and_says_which_model_to_choose(alice_client, make_conversation):
    conversation = make_conversation("local/chat")
    response = post_files(alice_client, conversation, [SimpleUploadedFile("dot.png", png(), "image/png")])
    assert response.status_code == 200 and response["HX-Retarget"] == "#composer"
    assert "attachments: local/chat does not accept images; choose a vision model." in response.content.decode()
    assert not Message.objects.filter(conversation=conversation).exists()


def test_audio_and_pdfs_are_refused_by_a_model_without_those_inputs(alice_client, make_conversation):
    conversation = make_conversation("local/vision")
    files = [SimpleUploadedFile("a.wav", wav(), "audio/wav"), SimpleUploadedFile("d.pdf", pdf(), "application/pdf")]
    html = post_files(alice_client, conversation, files).content.decode()
    assert "attachments: local/vision does not accept audio; choose a model with audio input." in html
    assert "attachments: local/vision does not accept PDFs; choose a model with PDF input." in html


def test_at_most_five_files_go_with_one_message(alice_client, make_conversation):
    conversation = make_conversation("local/vision")
    files = [SimpleUploadedFile(f"{i}.png", png(), "image/png") for i in range(6)]
    html = post_files(alice_client, conversation, files).content.decode()
    assert "attachments: at most 5 files per message (got 6)." in html
    assert not Attachment.objects.exists()


def test_a_file_over_20_mb_is_refused_naming_the_limit(alice_client, make_conversation):
    conversation = make_conversation("local/vision")
    big = SimpleUploadedFile("big.png", png() + b"\0" * (21 * 1024 * 1024), "image/png")
    html = post_files(alice_client, conversation, [big]).content.decode()
    assert "attachments: big.png is 21.0 MB; the limit is 20 MB per file." in html


def test_files_of_other_types_or_not_what_they_claim_are_refused(alice_client, make_conversation):
    conversation = make_conversation("local/omni")
    files = [
        SimpleUploadedFile("notes.txt", b"hello", "text/plain"),
        SimpleUploadedFile("fake.png", b"<script>alert(1)</script>", "image/png"),
    ]
    html = post_files(alice_client, conversation, files).content.decode()
    assert "attachments: notes.txt (text/plain) is not an accepted type; accepted: image (PNG, JPEG, GIF, WebP)" in html
    assert "attachments: fake.png is not a PNG, JPEG, GIF or WebP image." in html


def test_the_attach_button_follows_the_models_inputs(alice_client, make_conversation):
    page = alice_client.get(reverse("chat:conversation", args=[make_conversation("local/omni").pk])).content.decode()
    assert 'aria-label="Attach files"' in page
    assert 'accept="image/png,image/jpeg,image/gif,image/webp,audio/mpeg,' in page and "application/pdf" not in page
    plain = alice_client.get(reverse("chat:conversation", args=[make_conversation("local/chat").pk])).content.decode()
    assert 'accept=""' in plain and 'data-attach aria-label="Attach files"' in plain
    assert 'title="Attach images, audio, video or PDFs the model accepts" hidden>' in plain


# ---------------------------------------------------------------- the request body


def test_the_image_goes_upstream_as_a_data_uri_after_the_text(make_conversation, alice, media_root):
    conversation = make_conversation("local/vision")
    image = png()
    turn = services.prepare_turn(conversation, "what is this?", attachments=[upload("dot.png", image, "image/png")])
    assert turn.request.body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "what is this?"},
                {"type": "image_url", "image_url": {"url": data_uri("image/png", image)}},
            ],
        }
    ]
    saved = Attachment.objects.get(message=turn.user_message)
    assert (saved.kind, saved.content_type, saved.name, saved.size) == ("image", "image/png", "dot.png", len(image))
    assert saved.file.name.startswith(f"chat/{alice.pk}/") and saved.file.name.endswith(".png")
    assert (media_root / saved.file.name).read_bytes() == image


def test_earlier_turns_keep_their_parts(make_conversation):
    conversation = make_conversation("local/omni")
    image, sound = png(), wav()
    first = services.prepare_turn(
        conversation,
        "describe both",
        attachments=[upload("dot.png", image, "image/png"), upload("tone.wav", sound, "audio/wav")],
    )
    Message.objects.filter(pk=first.assistant.pk).update(status="complete", content="A blue image and silence.")
    second = services.prepare_turn(conversation, "and now?")
    messages = second.request.body["messages"]
    assert messages[0]["content"][1:] == [
        {"type": "image_url", "image_url": {"url": data_uri("image/png", image)}},
        {"type": "audio_url", "audio_url": {"url": data_uri("audio/wav", sound)}},
    ]
    assert messages[1] == {"role": "assistant", "content": [{"type": "text", "text": "A blue image and silence."}]}
    assert messages[2] == {"role": "user", "content": [{"type": "text", "text": "and now?"}]}


def test_a_pdf_goes_to_the_ocr_model_through_image_url_without_detail(make_conversation):
    conversation = make_conversation("local/ocr")
    document = pdf()
    turn = services.prepare_turn(conversation, "read it", attachments=[upload("d.pdf", document, "application/pdf")])
    part = turn.request.body["messages"][0]["content"][1]
    assert part == {"type": "image_url", "image_url": {"url": data_uri("application/pdf", document)}}


def test_a_model_that_cannot_take_earlier_attachments_gets_none_and_a_note(make_conversation):
    conversation = make_conversation("local/vision")
    turn = services.prepare_turn(conversation, "what is this?", attachments=[upload("dot.png", png(), "image/png")])
    Message.objects.filter(pk=turn.assistant.pk).update(status="complete", content="A blue square.")
    conversation.model_id = "local/chat"
    conversation.save()
    request = services.preview_request(conversation, "next")
    assert [m["content"] for m in request.body["messages"]] == ["what is this?", "A blue square.", "next"]
    assert "1 attachment is not sent: local/chat does not accept images." in request.note


def test_the_request_preview_shows_the_data_uri_cut_short(alice_client, make_conversation):
    conversation = make_conversation("local/vision")
    image = png(640, 480)
    services.prepare_turn(conversation, "what is this?", attachments=[upload("big.png", image, "image/png")])
    full = base64.b64encode(image).decode()
    expected = f"data:image/png;base64,{full[:32]}…({round(len(image) / 1024)} KB)"

    preview = alice_client.get(reverse("chat:request_preview", args=[conversation.pk])).json()
    assert preview["messages"][0]["content"][1] == {"type": "image_url", "image_url": {"url": expected}}
    page = alice_client.get(reverse("chat:conversation", args=[conversation.pk])).content.decode()
    assert expected in page and full[:200] not in page


# ---------------------------------------------------------------- display and access


def test_the_thread_shows_thumbnails_players_and_file_links(alice_client, make_conversation):
    conversation = make_conversation("local/omni")
    services.prepare_turn(
        conversation,
        "look",
        attachments=[upload("dot.png", png(), "image/png"), upload("tone.wav", wav(), "audio/wav")],
    )
    image, sound = Attachment.objects.order_by("pk")
    page = alice_client.get(reverse("chat:conversation", args=[conversation.pk])).content.decode()
    assert f'<img src="{reverse("chat:attachment", args=[image.pk])}" alt="dot.png"' in page
    assert f'<audio controls preload="metadata" src="{reverse("chat:attachment", args=[sound.pk])}"' in page


async def body_of(response) -> bytes:
    return b"".join([chunk async for chunk in response.streaming_content])


@pytest.mark.django_db(transaction=True)
async def test_only_the_owner_can_open_an_attachment(async_client, alice, bob, make_conversation):
    conversation = await sync_to_async(make_conversation)("local/ocr")
    image, document = png(), pdf()
    await sync_to_async(services.prepare_turn)(
        conversation,
        "look",
        attachments=[upload("dot.png", image, "image/png"), upload("scan.pdf", document, "application/pdf")],
    )
    shown, downloaded = [a async for a in Attachment.objects.order_by("pk")]

    await async_client.aforce_login(alice)
    response = await async_client.get(reverse("chat:attachment", args=[shown.pk]))
    assert response.status_code == 200 and await body_of(response) == image
    assert response["Content-Type"] == "image/png" and response["X-Content-Type-Options"] == "nosniff"
    assert response["Content-Disposition"] == 'inline; filename="dot.png"'
    response = await async_client.get(reverse("chat:attachment", args=[downloaded.pk]))
    assert response["Content-Disposition"] == 'attachment; filename="scan.pdf"'
    assert await body_of(response) == document

    await async_client.aforce_login(bob)
    assert (await async_client.get(reverse("chat:attachment", args=[shown.pk]))).status_code == 404


def test_a_duplicate_shares_the_files_and_the_last_delete_removes_them(
    make_conversation, media_root, django_capture_on_commit_callbacks
):
    conversation = make_conversation("local/vision")
    services.prepare_turn(conversation, "look", attachments=[upload("dot.png", png(), "image/png")])
    copy = conversation.duplicate()
    original, copied = Attachment.objects.order_by("pk")
    assert copied.message.conversation == copy and copied.file.name == original.file.name
    path = media_root / original.file.name
    with django_capture_on_commit_callbacks(execute=True):
        conversation.delete()
    assert path.exists()
    with django_capture_on_commit_callbacks(execute=True):
        copy.delete()
    assert not path.exists()


# ---------------------------------------------------------------- against the local API


@pytest.mark.django_db(transaction=True)
async def test_the_vision_model_describes_the_real_size_of_the_sent_image(
    live_server, alice, async_client, make_conversation
):
    conversation = await sync_to_async(make_conversation)("local/vision")
    await async_client.aforce_login(alice)
    response = await async_client.post(
        reverse("chat:send", args=[conversation.pk]),
        {"content": "What is in this picture?", "attachments": [SimpleUploadedFile("dot.png", png(), "image/png")]},
        headers={"HX-Request": "true"},
    )
    html = response.content.decode()
    attachment = await Attachment.objects.aget(message__conversation=conversation)
    assert f'src="{reverse("chat:attachment", args=[attachment.pk])}"' in html
    assistant = await Message.objects.aget(conversation=conversation, role="assistant")
    answer = await finish(assistant.pk)
    assert answer.status == "complete", answer.error
    assert "64×48 px PNG" in answer.content

    # The next turn re-sends the image; the local API decodes it again and accepts the request.
    turn = await services.send(conversation, "Thanks. And the colour?")
    image_part = turn.request.body["messages"][0]["content"][1]
    assert image_part["image_url"]["url"] == data_uri("image/png", png())
    second = await finish(turn.assistant.pk)
    assert second.status == "complete", second.error


@pytest.mark.django_db(transaction=True)
async def test_the_ocr_model_accepts_a_pdf_and_the_omni_model_audio(live_server, alice, make_conversation):
    ocr = await sync_to_async(make_conversation)("local/ocr")
    turn = await services.send(ocr, "Read this", attachments=[upload("d.pdf", pdf(), "application/pdf")])
    answer = await finish(turn.assistant.pk)
    assert answer.status == "complete", answer.error
    assert "PDF document, 1 page" in answer.content

    omni = await sync_to_async(make_conversation)("local/omni")
    turn = await services.send(omni, "Listen", attachments=[upload("tone.wav", wav(0.5), "audio/wav")])
    answer = await finish(turn.assistant.pk)
    assert answer.status == "complete", answer.error
    assert "0.50 s of pcm_s16le audio, 16000 Hz" in answer.content
