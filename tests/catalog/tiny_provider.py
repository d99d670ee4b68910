"""A tiny OpenAI-compatible provider for catalog and request tests: its model list can change, it records every
request body, and it can refuse `stream_options` the way some providers do (400 naming the field)."""

import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.serving import thread_for


class TinyProvider:
    def __init__(self, models=("acme/chat",)):
        self.models: list = [m if isinstance(m, dict) else {"id": m} for m in models]
        self.bodies: list[dict] = []
        self.list_models = True
        self.reject_stream_options = False
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = thread_for(self._server)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def set_models(self, *ids) -> None:
        self.models = [m if isinstance(m, dict) else {"id": m} for m in ids]

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def _handler(self):
        provider = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _json(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                if self.path == "/v1/models" and provider.list_models:
                    data = [{"object": "model", "owned_by": "acme", **m} for m in provider.models]
                    return self._json(200, {"object": "list", "data": data})
                return self._json(404, {"error": {"message": f"Unknown path {self.path}"}})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                if self.path != "/v1/chat/completions":
                    return self._json(404, {"error": {"message": f"Unknown path {self.path}"}})
                provider.bodies.append(body)
                if provider.reject_stream_options and "stream_options" in body:
                    message = "Unrecognized request argument supplied: stream_options"
                    return self._json(400, {"error": {"message": message, "type": "invalid_request_error"}})
                if body.get("model") not in {m["id"] for m in provider.models}:
                    message = f"The model `{body.get('model')}` does not exist or you do not have access to it."
                    return self._json(404, {"error": {"message": message, "type": "invalid_request_error"}})
                usage = {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}
                if not body.get("stream"):
                    message = {"role": "assistant", "content": "Hello world"}
                    choice = {"index": 0, "message": message, "finish_reason": "stop"}
                    return self._json(
                        200, {"id": "c1", "object": "chat.completion", "choices": [choice], "usage": usage}
                    )
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                head = {"id": "c1", "object": "chat.completion.chunk", "model": body["model"]}
                deltas = [{"role": "assistant"}, {"content": "Hello"}, {"content": " world"}]
                for delta in deltas:
                    self._event({**head, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
                self._event({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
                if (body.get("stream_options") or {}).get("include_usage"):
                    self._event({**head, "choices": [], "usage": usage})
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                self.close_connection = True

            def _event(self, payload: dict) -> None:
                self.wfile.write(b"data: " + json.dumps(payload).encode() + b"\n\n")
                self.wfile.flush()

        return Handler
