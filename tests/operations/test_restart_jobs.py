"""A restart behind the balancer with a speech clip, an evaluation run and a local batch in flight on the restarted
process (issue 35.2): the drain lets each finish whole (the run's cells in flight; the run is then taken up by the
other process), the process exits, starts again, and nothing is interrupted.

The same fleet as tests/operations/test_rolling_restart.py (Debian's HAProxy in front of two daphne processes on
PostgreSQL + Redis). The jobs are started on one process directly, as if the balancer had sent them there; each
lasts a few seconds, so they are running when that process is told to stop (a local batch's requests are claimed
from the queue by whichever process polls first: it ends whole on either)."""

import asyncio
import json
import time
from http.server import ThreadingHTTPServer

import pytest
import websockets

from playground.batches.models import TERMINAL, Batch
from playground.catalog.services import add_by_hand
from playground.connections.models import Connection
from playground.speech.models import SpeechClip
from tests.batches.conftest import wait_for_status
from tests.evaluate.conftest import make_evaluation, statuses
from tests.faults.conftest import logged_in
from tests.operations.tabs import cookie_of
from tests.operations.test_rolling_restart import _jobs_at_sigterm, pytestmark  # noqa: F401 (the same marks)
from tests.serving import thread_for
from tests.speech.provider import SpeechProvider, moss_clip_form
from tests.waiting import wait_for

CHUNKS, CHUNK = 80, 1024  # the clip: 80 KiB over 4 s
SERVER = {
    "LOCAL_API_TOKEN_RATE": "20",  # an evaluation cell's answer streams for a second or two
    "LOCAL_API_BATCH_DELAY": "0.25",  # 16 requests: about 4 s
    "PLAYGROUND_BATCH_TRACK_SECONDS": "1",
    "PLAYGROUND_DRAIN_SECONDS": "40",
}
SAY = "{{question}} [say:The answer to {{question}} is given here in a few more words than one.]"


class _FiniteSpeech(SpeechProvider):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Type", "audio/mpeg")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for _ in range(CHUNKS):
                self.wfile.write(f"{CHUNK:x}\r\n".encode() + b"\xff" * CHUNK + b"\r\n")
                self.wfile.flush()
                time.sleep(0.05)
            self.wfile.write(b"0\r\n\r\n")
        except OSError:
            pass


@pytest.fixture
def speech_provider():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FiniteSpeech)
    server.daemon_threads = True
    thread_for(server).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


class _At:
    """A server as tests/faults/conftest.logged_in takes it."""

    def __init__(self, url: str):
        self.url = url


def _start_clip(http, connection) -> SpeechClip:
    response = http.post("/speech/clips/", data=moss_clip_form(connection))
    assert response.status_code in (200, 302), response.text[:2000]
    return SpeechClip.objects.latest("pk")


def _start_batch(http, alice) -> Batch:
    local = Connection.objects.get(owner=alice, team=None, is_local=True)
    prompts = "\n".join(f"Say the number {n}." for n in range(16))
    data = {"connection": str(local.pk), "source": "prompts", "model": "local/chat", "prompts": prompts}
    data |= {"system": "", "max_tokens": "", "completion_window": "24h", "metadata_key": [""], "metadata_value": [""]}
    response = http.post("/batches/new/", data=data)
    assert response.status_code == 200 and "created with 16 requests" in response.text, response.text[:2000]
    return Batch.objects.latest("pk")


async def _start_run(host: str, cookie: str, evaluation_pk: int) -> None:
    """Start a live run over the evaluation page's socket and wait until its first cell runs."""
    async with websockets.connect(
        f"ws://{host}/ws/evaluate/{evaluation_pk}/",
        additional_headers={"Cookie": cookie, "Origin": f"http://{host}"},
        open_timeout=10,
    ) as ws:
        await ws.send(json.dumps({"type": "run", "scope": "all", "target": 0, "concurrency": 2}))
        while True:
            event = json.loads(await asyncio.wait_for(ws.recv(), 30))
            if event["type"] == "cell" and event.get("status") == "running":
                return


def test_a_restart_lets_a_clip_an_evaluation_run_and_a_local_batch_in_flight_finish_whole(
    alice, catalog, fleet, balancer, speech_provider
):
    provider = Connection(owner=alice, name="Finite speech", base_url=speech_provider)
    provider.set_key("sk-finite")
    provider.save()
    add_by_hand(provider, "fnlp/MOSS-TTSD-v0.5")
    evaluation = make_evaluation(alice, rows=8, variants=2, user=SAY)
    victim = _At(f"http://127.0.0.1:{fleet.ports[0]}")

    with logged_in(alice, victim, follow_redirects=False) as http:
        clip = _start_clip(http, provider)
        batch = _start_batch(http, alice)
        cookie = cookie_of(http.cookies["sessionid"])
        asyncio.run(_start_run(victim.url.removeprefix("http://"), cookie, evaluation.pk))
    wait_for(lambda: clip.path.exists() and clip.path.stat().st_size > 4 * CHUNK, timeout=30, what="audio on disk")

    fleet.terminate(0)
    fleet.wait_exit(0, 60)
    jobs = _jobs_at_sigterm(fleet.log(0))
    fleet.start_again(0)
    balancer.wait_up("web1")

    # The clip was still streaming when the process was told to stop, and was let finish: every byte is kept.
    clip.refresh_from_db()
    assert clip.status == SpeechClip.COMPLETE, (clip.status, clip.error)
    assert clip.bytes == clip.path.stat().st_size == CHUNKS * CHUNK
    # Every cell of the run is filled, none stopped: those sent before the SIGTERM by the draining process, the
    # others by the process that took the run up (evaluate/resume.py).
    wait_for(lambda: statuses(evaluation) == {"done": 16}, timeout=60, what="every cell of the run answered")
    # The batch's requests ran to their end on the draining process; the tracker (any process) files the results.
    with logged_in(alice, _At(balancer.url)) as http:
        final = wait_for_status(http, batch.pk, TERMINAL, timeout=60)
    assert 'data-status="completed"' in final and "16 of 16 done" in final, final
    # The clip and the run at least (the batch's requests are claimed by whichever process polls first).
    assert jobs and jobs[-1] >= 2, f"the process drained {jobs} jobs: the clip and the run were not in flight"
    assert balancer.responses_5xx() == 0, balancer.errors()
