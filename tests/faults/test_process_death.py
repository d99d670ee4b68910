"""A server process killed with SIGKILL mid-generation: after a restart, the heartbeat sweep ends what it left
running as interrupted with what it had saved; a retry keeps that answer until the new one is complete.

These run on both configurations (SQLite and the in-memory layer, or PostgreSQL and Redis)."""

import time
from http.server import ThreadingHTTPServer

import pytest
from django.urls import reverse

from playground.catalog.services import add_by_hand
from playground.chat.models import Message
from playground.connections.models import Connection
from playground.speech.models import SpeechClip
from tests.faults.conftest import local_conversation, logged_in
from tests.serving import thread_for
from tests.speech.provider import SpeechProvider, moss_clip_form
from tests.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

# A short sweep, so that the test waits seconds rather than the production default.
FAST_SWEEP = {"PLAYGROUND_STALE_SECONDS": "2", "PLAYGROUND_HEARTBEAT_SECONDS": "0.5"}
STREAMING = Message.STREAMING


@pytest.mark.needs_local_api
def test_a_killed_chat_process_leaves_an_interrupted_answer_that_a_retry_keeps_until_replaced(alice, servers):
    conversation = local_conversation(alice)
    first = servers(LOCAL_API_TOKEN_RATE="100", **FAST_SWEEP)
    with logged_in(alice, first) as http:
        response = http.post(reverse("chat:send", args=[conversation.pk]), data={"content": "write 3000 words"})
        assert response.status_code == 200, response.text
    answer = Message.objects.get(conversation=conversation, role="assistant")
    wait_for(lambda: Message.objects.get(pk=answer.pk).content, timeout=30, what="a flushed partial answer")
    first.kill()
    answer.refresh_from_db()
    assert answer.status == STREAMING and answer.content

    second = servers(LOCAL_API_TOKEN_RATE="0", **FAST_SWEEP)
    interrupted = wait_for(
        lambda: Message.objects.filter(pk=answer.pk).exclude(status=STREAMING).first(),
        timeout=30,
        what="the sweep of the new process",
    )
    assert interrupted.status == Message.INTERRUPTED
    # What the dead process had flushed is kept (it may have flushed once more after our read).
    assert interrupted.content.startswith(answer.content)

    with logged_in(alice, second) as http:
        response = http.post(reverse("chat:retry", args=[conversation.pk, answer.pk]))
        assert response.status_code == 200, response.text
        # The page gets both articles: the interrupted answer stays until the new one is complete.
        assert f'data-message-id="{answer.pk}"' in response.text and 'data-status="streaming"' in response.text
    assert Message.objects.get(pk=answer.pk).content == interrupted.content
    retried = Message.objects.filter(conversation=conversation, role="assistant").exclude(pk=answer.pk).get()
    done = wait_for(
        lambda: Message.objects.filter(pk=retried.pk).exclude(status=STREAMING).first(),
        timeout=60,
        what="the retried answer",
    )
    assert done.status == Message.COMPLETE and done.content
    assert not Message.objects.filter(pk=answer.pk).exists()
    assert not Message.objects.filter(status=STREAMING).exists()


class _SlowSpeech(SpeechProvider):
    """A speech provider that streams a chunk every 50 ms for up to a minute (until the client goes away)."""

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Type", "audio/mpeg")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for _ in range(1200):
                self.wfile.write(b"400\r\n" + b"\xff" * 1024 + b"\r\n")
                self.wfile.flush()
                time.sleep(0.05)
            self.wfile.write(b"0\r\n\r\n")
        except OSError:
            pass


@pytest.fixture
def slow_speech():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _SlowSpeech)
    server.daemon_threads = True
    thread = thread_for(server)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_a_killed_speech_process_leaves_an_incomplete_clip_with_its_bytes(alice, servers, catalog, slow_speech):
    provider = Connection(owner=alice, name="Slow", base_url=slow_speech)
    provider.set_key("sk-slow")
    provider.save()
    add_by_hand(provider, "fnlp/MOSS-TTSD-v0.5")  # it has no model list: its one model is added by hand
    first = servers(**FAST_SWEEP)
    with logged_in(alice, first, follow_redirects=False) as http:
        response = http.post(
            "/speech/clips/",
            data=moss_clip_form(provider),
            headers={"HX-Request": ""},
        )
        assert response.status_code in (200, 302), response.text[:2000]
    clip = SpeechClip.objects.get(owner=alice)
    wait_for(lambda: clip.path.exists() and clip.path.stat().st_size > 4096, timeout=30, what="audio on disk")
    first.kill()
    assert SpeechClip.objects.get(pk=clip.pk).status == SpeechClip.STREAMING

    servers(**FAST_SWEEP)
    ended = wait_for(
        lambda: SpeechClip.objects.filter(pk=clip.pk).exclude(status=SpeechClip.STREAMING).first(),
        timeout=30,
        what="the sweep of the new process",
    )
    assert ended.status == SpeechClip.INCOMPLETE and ended.error["title"] == "Interrupted"
    assert ended.bytes == ended.path.stat().st_size > 4096
