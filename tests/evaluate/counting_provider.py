"""A provider that counts what it is asked: each chat request is counted by its (case, variant) content (the last
message, which names the row, and the model, which names the variant), and answered after a short pause with one
streamed line. The resumable-run tests read from it whether any cell was sent twice, or never.

It shares nothing with the playground's code nor with tests/fakeprovider: a plain HTTP/1.1 server in threads."""

import json
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.serving import thread_for

KEY = "sk-counting-provider"
MODELS = ["count-a", "count-b", "count-c", "count-d"]  # one per variant: the model says which variant asked


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # the listen backlog: a run opens 16 connections at once (the default is 5)


class CountingProvider:
    def __init__(self, delay: float = 0.02):
        self.delay = delay  # seconds before each answer: a run is long enough to be cut mid-way
        self.counts: Counter = Counter()
        self.lock = threading.Lock()
        self.server = _Server(("127.0.0.1", 0), _handler(self))

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def start(self) -> "CountingProvider":
        thread_for(self.server).start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def count(self, key: tuple[str, str]) -> None:
        with self.lock:
            self.counts[key] += 1

    def requests(self) -> int:
        with self.lock:
            return sum(self.counts.values())

    def duplicates(self) -> dict:
        with self.lock:
            return {key: n for key, n in self.counts.items() if n > 1}


def _handler(provider: CountingProvider):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            if not self.path.endswith("/chat/completions"):
                return self._answer(404, b'{"error": {"message": "not here", "type": "invalid_request_error"}}')
            asked = str((body.get("messages") or [{}])[-1].get("content", ""))
            provider.count((str(body.get("model")), asked))
            time.sleep(provider.delay)
            chunks = [
                {"choices": [{"index": 0, "delta": {"role": "assistant", "content": f"Answer to {asked}"}}]},
                {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
            ]
            if (body.get("stream_options") or {}).get("include_usage"):
                chunks.append({"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 3}})
            events = "".join(f"data: {json.dumps({'object': 'chat.completion.chunk', **c})}\n\n" for c in chunks)
            self._answer(200, (events + "data: [DONE]\n\n").encode(), "text/event-stream")

        def _answer(self, status: int, data: bytes, kind: str = "application/json") -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


def counting_evaluation(owner, provider: CountingProvider, *, rows: int, variants: int = 4):
    """An evaluation of `owner` on a connection to `provider`, `rows` rows by `variants` variants, each variant on
    a model of its own."""
    from playground.catalog.services import add_by_hand
    from playground.connections.models import Connection
    from tests.evaluate.conftest import make_evaluation

    connection = Connection(owner=owner, name="Counting", base_url=provider.url)
    connection.set_key(KEY)
    connection.save()
    for model in MODELS[:variants]:
        add_by_hand(connection, model, kind="chat")
    evaluation = make_evaluation(owner, rows=rows, variants=variants)
    evaluation.connection = connection
    evaluation.save(update_fields=["connection"])
    for variant, model in zip(evaluation.variants.order_by("position"), MODELS, strict=False):
        variant.model = model
        variant.save(update_fields=["model"])
    return evaluation
