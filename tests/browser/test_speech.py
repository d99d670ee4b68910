"""Speech in Chromium: the clip plays while it is still arriving, and downloads as the chosen format."""

import io
import time

import av
import pytest
from playwright.sync_api import expect

from playground.speech.models import SpeechClip
from tests.browser.conftest import orm, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]

SENTENCE = "[S1] The quick brown fox jumps over the lazy dog near the river bank. [S2] Really? Tell me more about it. "


def test_a_clip_plays_before_the_upstream_finishes_and_downloads_as_mp3(live_server, catalog, alice_page):
    page = alice_page
    page.goto("/speech/")
    page.fill("#id_input", SENTENCE * 80)  # about 8,300 characters: several seconds of synthesis
    assert page.inner_text("#char-count") == f"{len(SENTENCE * 80):,}"
    page.select_option("#id_voice", "local/tts:bella")
    page.select_option("[name=response_format]", "mp3")
    page.evaluate(
        """() => document.addEventListener("playing", (e) => { window.playingAt = window.playingAt || Date.now(); },
                                           true)"""
    )
    page.click("#speech-submit")
    page.wait_for_selector("audio.player")
    page.wait_for_function("() => document.querySelector('audio.player').currentTime > 0.5", timeout=30_000)
    playing_at = page.evaluate("window.playingAt") / 1000
    clip = orm(SpeechClip.objects.get)
    assert page.get_attribute("audio.player", "src") == f"/speech/clips/{clip.pk}/stream/"
    # The clip list shows the new clip without a reload.
    expect(page.locator(f"#clip-{clip.pk}")).to_contain_text("arriving")
    page.evaluate("window.scrollTo(0, 0)")
    screenshot(page, "speech-playing-light")
    # The player was playing before the upstream finished.
    deadline = time.monotonic() + 120
    while clip.status == SpeechClip.STREAMING and time.monotonic() < deadline:
        time.sleep(0.5)
        orm(clip.refresh_from_db)
    assert clip.status == "complete"
    assert playing_at < clip.finished.timestamp() - 1
    page.wait_for_selector(f"#clip-status-{clip.pk}[data-status=complete]", timeout=10_000)
    with page.expect_download() as download_info:
        page.click(f"#clip-status-{clip.pk} a[download]")
    download = download_info.value
    assert download.suggested_filename.endswith("_local-tts_bella.mp3")
    data = download.path().read_bytes()
    assert data == clip.path.read_bytes()
    with av.open(io.BytesIO(data)) as container:
        assert container.format.name == "mp3"
        assert sum(frame.samples for frame in container.decode(audio=0)) > 44100 * 30
    page.emulate_media(color_scheme="dark")
    screenshot(page, "speech-dark")


def test_the_voice_picker_lists_the_local_voices(live_server, catalog, alice_page):
    page = alice_page
    page.goto("/speech/")
    values = page.eval_on_selector_all("#id_voice option", "options => options.map(o => o.value)")
    presets = [f"local/tts:{n}" for n in ("alex", "anna", "bella", "benjamin", "charles", "claire", "david", "diana")]
    assert values[:8] == presets
    custom = [value for value in values if value.startswith("speech:")]
    assert len(custom) == 3
    # Formats offer only their sample rates.
    page.select_option("[name=response_format]", "opus")
    assert page.eval_on_selector_all("[name=sample_rate] option", "o => o.map(x => x.value)") == ["48000"]
    page.select_option("[name=response_format]", "mp3")
    assert page.eval_on_selector_all("[name=sample_rate] option", "o => o.map(x => x.value)") == ["32000", "44100"]
    # Voice and reference voices are mutually exclusive: choosing references disables the single voice.
    page.check("input[name=voice_mode][value=references]")
    assert page.is_disabled("#id_voice") and page.is_enabled("#id_reference_1")
    page.click("[data-insert-tag='[S2] ']")
    assert page.input_value("#id_input") == "[S2] "
    screenshot(page, "speech-light")


def test_a_finished_wav_has_a_true_header_and_the_list_offers_it_without_a_reload(live_server, catalog, alice_page):
    import wave

    page = alice_page
    page.goto("/speech/")
    page.fill("#id_input", "[S1] A short clip to check its header. [S2] And its length.")
    page.select_option("#id_voice", "local/tts:bella")
    page.select_option("[name=response_format]", "wav")
    page.click("#speech-submit")
    page.wait_for_selector("audio.player")
    clip = orm(SpeechClip.objects.get)
    status = page.locator(f"#clip-status-{clip.pk}")
    expect(status).to_have_attribute("data-status", "complete", timeout=60_000)
    # The new clip's row and the player get Download and Share without a reload.
    row = page.locator(f"#clip-{clip.pk}")
    expect(row.get_by_role("link", name="Download", exact=True)).to_be_visible()
    expect(row.get_by_role("link", name="Share")).to_be_visible()
    expect(status.get_by_role("link", name="Share")).to_be_visible()
    with page.expect_download() as download_info:
        row.get_by_role("link", name="Download", exact=True).click()
    data = download_info.value.path().read_bytes()
    with wave.open(io.BytesIO(data)) as clip_wav:
        seconds = clip_wav.getnframes() / clip_wav.getframerate()
        assert clip_wav.getnframes() * clip_wav.getsampwidth() * clip_wav.getnchannels() == len(data) - 44
    assert 1 < seconds < 30
    # A range request still gets its bytes.
    part = page.request.get(f"/speech/clips/{clip.pk}/download/", headers={"Range": "bytes=0-99"})
    assert part.status == 206 and part.body() == data[:100]
