"""Following a speech clip from a test: the clip a form post created, and waiting for its relay to end."""

import re

from playground.speech.models import SpeechClip
from tests.waiting import wait_for


def created_clip(response) -> SpeechClip:
    assert response.status_code == 302, response.text[:2000]
    pk = int(re.search(r"/speech/clips/(\d+)/", response.headers["location"]).group(1))
    return SpeechClip.objects.get(pk=pk)


def wait_until_finished(clip: SpeechClip, timeout: float = 60) -> SpeechClip:

    def finished():
        clip.refresh_from_db()
        return clip.status != SpeechClip.STREAMING

    wait_for(finished, timeout=timeout, what="the clip to finish")
    return clip
