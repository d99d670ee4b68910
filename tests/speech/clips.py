"""Following a speech clip from a test: the clip a form post created, and waiting for its relay to end."""

import re
import time

from playground.speech.models import SpeechClip


def created_clip(response) -> SpeechClip:
    assert response.status_code == 302, response.text[:2000]
    pk = int(re.search(r"/speech/clips/(\d+)/", response.headers["location"]).group(1))
    return SpeechClip.objects.get(pk=pk)


def wait_until_finished(clip: SpeechClip, timeout: float = 60) -> SpeechClip:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        clip.refresh_from_db()
        if clip.status != SpeechClip.STREAMING:
            return clip
        time.sleep(0.1)
    raise AssertionError("the clip never finished")
