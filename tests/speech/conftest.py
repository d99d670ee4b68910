import hashlib
import json
import random
import time
from http.server import ThreadingHTTPServer

import pytest

from playground.connections.models import Connection
from tests.serving import thread_for
from tests.speech.provider import SpeechProvider


@pytest.fixture
def local_connection(alice):
    return Connection.objects.get(owner=alice, is_local=True)


class _FakeProvider(SpeechProvider):
    """A deterministic speech provider: the audio bytes are a pure function of the request body."""

    def do_POST(self):
        request = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        audio = fake_audio(request)
        self.send_response(200)
        self.send_header("Content-Type", "audio/mpeg")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("x-service-trace-id", "fake-" + hashlib.sha256(request).hexdigest()[:12])
        self.end_headers()
        drop_after = int(self.headers.get("X-Fake-Drop-After") or 0)
        for number, start in enumerate(range(0, len(audio), 7919)):
            if drop_after and number >= drop_after:
                # The connection breaks: no terminating chunk.
                self.close_connection = True
                return
            piece = audio[start : start + 7919]
            self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
            self.wfile.flush()
            time.sleep(0.002)
        self.wfile.write(b"0\r\n\r\n")


def fake_audio(request: bytes) -> bytes:
    canonical = json.dumps(json.loads(request), sort_keys=True).encode()
    return random.Random(hashlib.sha256(canonical).digest()).randbytes(600_000)


@pytest.fixture
def fake_provider():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeProvider)
    thread = thread_for(server)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()
