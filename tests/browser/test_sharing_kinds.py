"""Shared rerank comparisons, speech clips and batches in Chromium, at desktop and phone widths."""

import io
import wave
from pathlib import Path

import pytest
from django.conf import settings
from playwright.sync_api import expect

from playground.batches.models import Batch
from playground.connections.models import ensure_local_connection
from playground.rerank.models import RerankRun
from playground.sharing.freeze import freeze
from playground.sharing.models import Share
from playground.speech.models import SpeechClip
from tests.browser.conftest import orm, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]


def tone_wav(seconds: float = 1.0) -> bytes:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(8000)
        out.writeframes(b"\x00\x10\x00\xf0" * int(4000 * seconds))
    return buffer.getvalue()


def share_of(source, kind: str) -> Share:
    share = Share(owner=source.owner, kind=kind, title="x")
    share.source = source
    share.save()
    freeze(share)
    return share


def shoot(page, name: str) -> None:
    screenshot(page, f"{name}-1280")
    page.set_viewport_size({"width": 390, "height": 844})
    screenshot(page, f"{name}-390")
    page.set_viewport_size({"width": 1280, "height": 860})


def test_a_shared_rerank_comparison_a_clip_and_a_batch(page, alice, live_server, http_for):
    connection = orm(ensure_local_connection, alice)
    refused = []
    page.on("console", lambda m: refused.append(m.text) if "Content Security Policy" in m.text else None)
    documents = ["the moon pulls the sea", "bread recipes", "tides follow the moon"]
    base = orm(
        RerankRun.objects.create,
        owner=alice,
        connection=connection,
        model="local/rerank",
        query="what causes tides",
        documents=documents,
        results=[{"index": 0, "relevance_score": 0.91}, {"index": 2, "relevance_score": 0.62}],
    )
    other = orm(
        RerankRun.objects.create,
        owner=alice,
        connection=connection,
        model="local/rerank-lite",
        query="what causes tides",
        documents=documents,
        results=[{"index": 2, "relevance_score": 0.97}, {"index": 0, "relevance_score": 0.4}],
        compared_to=base,
    )
    page.goto(f"/s/{orm(share_of, other, 'rerank').token}/")
    expect(page.locator(".share-run")).to_have_count(2)
    expect(page.locator(".share-run").last).to_contain_text("▲ 1")
    shoot(page, "sharing-rerank")

    audio = tone_wav()
    path = Path(settings.MEDIA_ROOT) / "speech" / f"{alice.pk}" / "shared-test.wav"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(audio)
    clip = orm(
        SpeechClip.objects.create,
        owner=alice,
        connection=connection,
        model="local/tts",
        voice="local/tts:alex",
        text="[S1] Hello there.",
        response_format="wav",
        sample_rate=8000,
        status=SpeechClip.COMPLETE,
        file=str(path.relative_to(settings.MEDIA_ROOT)),
        bytes=len(audio),
    )
    share = orm(share_of, clip, "speech")
    path.unlink()  # the share plays its own copy
    page.goto(f"/s/{share.token}/")
    player = page.locator("audio.share-audio")
    page.wait_for_function("node => node.readyState >= 1 && node.duration > 0.9", arg=player.element_handle())
    shoot(page, "sharing-speech")

    batch = orm(
        Batch.objects.create,
        owner=alice,
        connection=connection,
        remote_id="batch_missing",
        input_file_id="file-missing",
        input_filename="prompts.jsonl",
        request_count=3,
        status="completed",
        request_counts={"total": 3, "completed": 3, "failed": 0},
    )
    # A batch share fetches the batch's files from the provider: made through the view, on the server.
    response = orm(http_for, alice).post(f"/shared/batch/{batch.pk}/", data={"visibility": "anyone", "expiry": "1d"})
    assert response.status_code == 302
    page.goto(f"/s/{orm(lambda: Share.objects.for_source(batch).get()).token}/")
    expect(page.locator(".share-page")).to_contain_text("prompts.jsonl")
    expect(page.locator(".share-page .alert-warn")).to_contain_text("only its status is shared")
    shoot(page, "sharing-batch")
    assert refused == []


def test_view_code_export_and_import_pages(open_chat):
    page = open_chat()
    page.locator(".share-menu > summary").click()
    screenshot(page, "sharing-chat-menu-1280")
    page.set_viewport_size({"width": 390, "height": 844})
    expect(page.locator(".share-menu > summary")).to_be_visible()
    page.set_viewport_size({"width": 1280, "height": 860})
    page.get_by_role("link", name="View code").click()
    expect(page.get_by_role("tab", name="curl", exact=True)).to_have_attribute("aria-selected", "true")
    page.get_by_role("tab", name="Python (streaming)").click()
    panel = page.get_by_role("tabpanel")
    expect(panel).to_contain_text("client.chat.completions.create(")
    expect(panel).to_contain_text("stream=True")
    shoot(page, "sharing-code")

    page.goto("/import/")
    page.get_by_label("Or paste JSON").fill(
        '[{"role": "user", "content": "Hello from elsewhere"}, {"role": "assistant"}]'
    )
    page.get_by_role("button", name="Import").click()
    expect(page.locator("#thread")).to_contain_text("Hello from elsewhere")
    page.goto("/import/")
    page.get_by_label("Or paste JSON").fill('[{"role": "robot", "content": "x"}]')
    page.get_by_role("button", name="Import").click()
    expect(page.get_by_role("alert")).to_contain_text("messages[0].role: must be one of")
    shoot(page, "sharing-import")
