"""An independent OpenAI-compatible provider for the test suite, with conventions unlike the local API's.

It shares no code with `playground/localapi` and follows what OpenAI's own API does where the spec and the local
API made other choices:

- `GET /models` lists only `id`, `object`, `created` and `owned_by`: no capabilities, no kind.
- A streamed answer carries usage only when `stream_options.include_usage` is true, and then in one last chunk
  whose `choices` is empty; the other chunks then carry `"usage": null`, and without the option no usage at all.
- `finish_reason` comes in a chunk of its own, with an empty delta; every chunk has a new `id`.
- A tool call streams its id and name first, then only `index` and fragments of the arguments.
- Errors are `{"error": {"message", "type", "param", "code"}}` with string codes; the trace id is `x-request-id`.
- Tool results are checked as OpenAI does: an assistant message with `tool_calls` must be followed by one `tool`
  message (`tool_call_id`, string `content`) per call, and a `tool` message must answer such a call.
- `/rerank` answers in the spec's shape; `/audio/speech` streams a short tone in the requested format.

Tests steer it through `FakeProvider.state` (shared with the server threads): `fail` makes every chat request
fail with that status, `reject_stream_options` refuses `stream_options` with a 400 naming the field, `strict`
refuses the parameters OpenAI does not have (`top_k`, `min_p`, ...) the same way, `requests` records every
request received and `billed` what each answer said it used (a chat's usage, a rerank's tokens, a clip's characters).
"""

import json
import secrets
import sys
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.fakeprovider.audio import CONTENT_TYPES, tone
from tests.serving import thread_for

KEY = "sk-fake-provider-key"
CHAT_MODEL = "fake-gpt-mini"  # an id the playground's catalog knows nothing about
TOOLS_MODEL = "Qwen/Qwen3-32B"  # a well-known id, so the catalog's facts (tools) apply
RERANK_MODEL = "BAAI/bge-reranker-v2-m3"
SPEECH_MODEL = "fnlp/MOSS-TTSD-v0.5"
EMBEDDING_MODEL = "text-embedding-3-small"
MODELS = [CHAT_MODEL, TOOLS_MODEL, RERANK_MODEL, SPEECH_MODEL, EMBEDDING_MODEL]
CHAT_MODELS = {CHAT_MODEL, TOOLS_MODEL}
NOT_OPENAI = {"top_k", "min_p", "enable_thinking", "thinking_budget"}
ARGUMENT_PIECE = 4  # characters of tool-call arguments per chunk

ERRORS = {
    401: (
        "Incorrect API key provided. You can find your API key in your account settings.",
        "invalid_request_error",
        "invalid_api_key",
    ),
    429: ("Rate limit reached for requests per minute (RPM): limit 3, used 3.", "requests", "rate_limit_exceeded"),
    500: ("The server had an error while processing your request.", "server_error", None),
    503: ("The engine is currently overloaded, please try again later.", "server_error", "overloaded"),
}


@dataclass
class State:
    fail: int | None = None
    reject_stream_options: bool = False
    strict: bool = False  # refuse parameters OpenAI does not have (top_k, min_p, ...) as OpenAI does
    echo_key: bool = False  # a wrong key's 401 quotes the key, whole and as a fragment (some providers do)
    error_mid_stream: bool = False  # a stream breaks off after its first word with an error chunk quoting the key
    delay: float = 0.005  # seconds between streamed chunks, so a stream is seen growing
    requests: list[dict] = field(default_factory=list)
    billed: list[dict] = field(default_factory=list)  # what each answer reported it used (tokens, characters)

    def bodies(self, path: str) -> list[dict]:
        return [r["body"] for r in self.requests if r["path"] == path]


def error_body(message: str, kind: str, code: str | None = None, param: str | None = None) -> dict:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def words_of(messages: list[dict]) -> str:
    last = messages[-1] if messages else {}
    content = last.get("content")
    if isinstance(content, list):
        content = " ".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content or "")


def answer_text(messages: list[dict]) -> str:
    last = messages[-1] if messages else {}
    if last.get("role") == "tool":
        return f"The tool answered {last.get('content')!s}; that settles it."
    return f"Fake provider here. You said: {words_of(messages)}. Here is a short answer in several words."


def tool_calls_for(body: dict) -> list[dict]:
    """Every tool of the request is called (in order) when the last message is the user's."""
    tools = body.get("tools") or []
    if not tools or (body.get("messages") or [{}])[-1].get("role") != "user":
        return []
    calls = []
    for number, tool in enumerate(tools):
        name = (tool.get("function") or {}).get("name", "tool")
        arguments = json.dumps({"query": words_of(body["messages"]), "attempt": number + 1})
        calls.append({"id": f"call_{secrets.token_hex(8)}", "name": name, "arguments": arguments})
    return calls


def tool_sequence_error(messages: list) -> str | None:
    """OpenAI's rule for tool results: each call of an assistant message is answered by the tool messages right
    after it, and a tool message answers one of those calls."""
    waiting: set[str] = set()
    for index, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role == "tool":
            if message.get("tool_call_id") not in waiting:
                return (
                    f"Invalid parameter: messages[{index}]: messages with role 'tool' must be a response to a "
                    "preceeding message with 'tool_calls'."
                )
            if not isinstance(message.get("content"), str):
                return f"Invalid type for 'messages[{index}].content': expected a string."
            waiting.discard(message["tool_call_id"])
            continue
        if waiting:
            return (
                "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
                f"'tool_call_id'. The following tool_call_ids did not have response messages: {', '.join(sorted(waiting))}"
            )
        if role == "assistant" and message.get("tool_calls"):
            waiting = {call.get("id") for call in message["tool_calls"] if isinstance(call, dict)}
    if waiting:
        return (
            "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
            f"'tool_call_id'. The following tool_call_ids did not have response messages: {', '.join(sorted(waiting))}"
        )
    return None


def usage_for(body: dict, completion: str, billed: list | None = None) -> dict:
    prompt = sum(len(str(m.get("content", "")).split()) for m in body.get("messages") or []) + 3
    produced = max(1, len(completion.split()))
    if billed is not None:
        billed.append({"prompt_tokens": prompt, "completion_tokens": produced})
    return {
        "prompt_tokens": prompt,
        "completion_tokens": produced,
        "total_tokens": prompt + produced,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
    }


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-openai/1.0"

    def log_message(self, *args):
        pass

    @property
    def state(self) -> State:
        return self.server.state

    # -- plumbing

    def _path(self) -> str:
        path = self.path.split("?")[0]
        return path[len("/v1") :] if path.startswith("/v1/") else path

    def _send_json(self, status: int, payload: dict, headers: dict | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("x-request-id", f"req_{secrets.token_hex(12)}")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _start_chunked(self, content_type: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("x-request-id", f"req_{secrets.token_hex(12)}")
        self.end_headers()

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _end_chunked(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _authorized(self) -> bool:
        if self.headers.get("Authorization") == f"Bearer {KEY}":
            return True
        message, kind, code = ERRORS[401]
        if self.state.echo_key:
            sent = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
            message = f"Incorrect API key provided: {sent} (starts {sent[:10]}***, ends ...{sent[-10:]})."
        self._send_json(401, error_body(message, kind, code))
        return False

    def _read_body(self) -> dict | None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = None
        if not isinstance(body, dict):
            self._send_json(
                400, error_body("We could not parse the JSON body of your request.", "invalid_request_error")
            )
            return None
        return body

    # -- routes

    def do_GET(self):
        path = self._path()
        self.state.requests.append({"method": "GET", "path": path, "body": None})
        if not self._authorized():
            return
        if path == "/models":
            created = 1_700_000_000
            data = [{"id": m, "object": "model", "created": created, "owned_by": "fake-org"} for m in MODELS]
            return self._send_json(200, {"object": "list", "data": data})
        self._not_found(path)

    def do_POST(self):
        path = self._path()
        body = self._read_body()
        self.state.requests.append({"method": "POST", "path": path, "body": body})
        if body is None or not self._authorized():
            return
        routes = {"/chat/completions": self._chat, "/rerank": self._rerank, "/audio/speech": self._speech}
        if path not in routes:
            return self._not_found(path)
        try:
            routes[path](body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _not_found(self, path: str) -> None:
        self._send_json(404, error_body(f"Unknown request URL: {path}.", "invalid_request_error", "unknown_url"))

    def _unknown_model(self, model) -> None:
        message = f"The model `{model}` does not exist or you do not have access to it."
        self._send_json(404, error_body(message, "invalid_request_error", "model_not_found"))

    # -- chat

    def _chat(self, body: dict) -> None:
        if self.state.fail:
            message, kind, code = ERRORS[self.state.fail]
            headers = {"retry-after": "7"} if self.state.fail == 429 else {}
            return self._send_json(self.state.fail, error_body(message, kind, code), headers)
        if body.get("model") not in CHAT_MODELS:
            return self._unknown_model(body.get("model"))
        if not isinstance(body.get("messages"), list) or not body["messages"]:
            message = "Invalid 'messages': empty array. Expected an array with minimum length 1."
            return self._send_json(400, error_body(message, "invalid_request_error", "empty_array", "messages"))
        if message := tool_sequence_error(body["messages"]):
            return self._send_json(400, error_body(message, "invalid_request_error", None, "messages"))
        if "stream_options" in body and not body.get("stream"):
            message = "The 'stream_options' parameter is only allowed when 'stream' is enabled."
            return self._send_json(400, error_body(message, "invalid_request_error", None, "stream_options"))
        refused = [
            name
            for name in body
            if (self.state.strict and name in NOT_OPENAI)
            or (self.state.reject_stream_options and name == "stream_options")
        ]
        if refused:
            message = f"Unrecognized request argument supplied: {refused[0]}"
            return self._send_json(400, error_body(message, "invalid_request_error", None, refused[0]))
        calls = tool_calls_for(body)
        text = "" if calls else answer_text(body["messages"])
        words = text.split(" ") if text else []
        finish = "tool_calls" if calls else "stop"
        limit = body.get("max_completion_tokens") or body.get("max_tokens")
        if isinstance(limit, int) and 0 < limit < len(words):
            words, finish = words[:limit], "length"
        text = " ".join(words)
        if body.get("stream"):
            return self._chat_stream(body, words, calls, finish)
        message = {"role": "assistant", "content": text or None, "refusal": None}
        if calls:
            message["tool_calls"] = [
                {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
                for c in calls
            ]
        self._send_json(
            200,
            {
                "id": f"chatcmpl-{secrets.token_hex(10)}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body["model"],
                "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
                "usage": usage_for(body, text or json.dumps([c["arguments"] for c in calls]), self.state.billed),
                "system_fingerprint": "fp_fake",
            },
        )

    def _chat_stream(self, body: dict, words: list[str], calls: list[dict], finish: str) -> None:
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        created = int(time.time())

        def event(choices: list[dict], **extra) -> None:
            chunk = {
                "id": f"chatcmpl-{secrets.token_hex(10)}",
                "object": "chat.completion.chunk",
                "created": created,
                "model": body["model"],
                "system_fingerprint": "fp_fake",
                "choices": choices,
            }
            if include_usage:
                chunk["usage"] = None
            chunk.update(extra)
            self._chunk(f"data: {json.dumps(chunk)}\n\n".encode())
            time.sleep(self.state.delay)

        def delta(content: dict, finish_reason=None) -> None:
            event([{"index": 0, "delta": content, "logprobs": None, "finish_reason": finish_reason}])

        self._start_chunked("text/event-stream; charset=utf-8")
        delta({"role": "assistant", "content": "", "refusal": None})
        for number, word in enumerate(words):
            delta({"content": word if number == 0 else " " + word})
            if self.state.error_mid_stream:
                sent = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
                failure = error_body(f"Quota check failed for key {sent} (…{sent[-10:]}).", "server_error")
                self._chunk(f"data: {json.dumps(failure)}\n\n".encode())
                return self._end_chunked()
        for index, call in enumerate(calls):
            first = {
                "index": index,
                "id": call["id"],
                "type": "function",
                "function": {"name": call["name"], "arguments": ""},
            }
            delta({"tool_calls": [first]})
            arguments = call["arguments"]
            for start in range(0, len(arguments), ARGUMENT_PIECE):
                piece = arguments[start : start + ARGUMENT_PIECE]
                delta({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
        delta({}, finish)
        if include_usage:
            produced = " ".join(words) or "".join(c["arguments"] for c in calls)
            event([], usage=usage_for(body, produced, self.state.billed))
        self._chunk(b"data: [DONE]\n\n")
        self._end_chunked()

    # -- rerank

    def _rerank(self, body: dict) -> None:
        if body.get("model") != RERANK_MODEL:
            return self._unknown_model(body.get("model"))
        query, documents = body.get("query"), body.get("documents")
        if isinstance(documents, str):
            documents = [documents]
        if not isinstance(query, str) or not query or not isinstance(documents, list) or not documents:
            message = "Both 'query' (a non-empty string) and 'documents' (at least one) are required."
            return self._send_json(400, error_body(message, "invalid_request_error", None, "documents"))
        terms = set(query.lower().split())
        scored = []
        for index, document in enumerate(documents):
            words = str(document).lower().replace(".", " ").replace(",", " ").split()
            overlap = sum(1 for word in words if word in terms)
            scored.append((overlap / (len(words) + 1), index, str(document)))
        scored.sort(key=lambda item: (-item[0], item[1]))
        top_n = body.get("top_n") if isinstance(body.get("top_n"), int) else len(scored)
        results = []
        for score, index, document in scored[:top_n]:
            item = {"index": index, "relevance_score": round(score, 6)}
            if body.get("return_documents"):
                item["document"] = {"text": document}
            results.append(item)
        tokens = len(query.split()) + sum(len(str(d).split()) for d in documents)
        meta = {"tokens": {"input_tokens": tokens, "output_tokens": 0}, "billed_units": {"search_units": 1}}
        self.state.billed.append({"prompt_tokens": tokens, "completion_tokens": 0})
        self._send_json(200, {"id": f"rerank-{secrets.token_hex(8)}", "results": results, "meta": meta})

    # -- speech

    def _speech(self, body: dict) -> None:
        if body.get("model") != SPEECH_MODEL:
            return self._unknown_model(body.get("model"))
        if not isinstance(body.get("input"), str) or not body["input"].strip():
            message = "Invalid 'input': expected a non-empty string."
            return self._send_json(400, error_body(message, "invalid_request_error", None, "input"))
        fmt = body.get("response_format") or "mp3"
        if fmt not in CONTENT_TYPES:
            message = f"Invalid 'response_format': {fmt!r}; supported: {', '.join(CONTENT_TYPES)}."
            return self._send_json(400, error_body(message, "invalid_request_error", None, "response_format"))
        rate = body.get("sample_rate") if isinstance(body.get("sample_rate"), int) else 24000
        audio = tone(fmt, rate)
        self.state.billed.append({"audio_characters": len(body["input"])})
        self._start_chunked(CONTENT_TYPES[fmt])
        for start in range(0, len(audio), 4096):
            self._chunk(audio[start : start + 4096])
            time.sleep(self.state.delay)
        self._end_chunked()


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # A client closing its keep-alive connection is ordinary; anything else is printed as usual.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class FakeProvider:
    """The fake on a free port of 127.0.0.1, served by threads of this process until `stop()`."""

    def __init__(self):
        self.server = Server(("127.0.0.1", 0), Handler)
        self.server.state = State()
        self.port = self.server.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.key = KEY
        self._thread = thread_for(self.server, name="fake-provider")

    @property
    def state(self) -> State:
        return self.server.state

    def start(self) -> "FakeProvider":
        self._thread.start()
        return self

    def reset(self) -> None:
        self.server.state = State()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(timeout=5)
