"""Chat completions of the local API without the HTTP: validation (spec 2.1-2.4, 8), media decoding,
generation with stop / max_tokens / n applied, usage, and the stream of chunks (spec 6).

Pure Python and asyncio; the view adds auth, faults, rate limits and the HTTP response.

Choices made where the spec is silent (documented in /local/v1/openapi.json too):
- A parameter that exists in the API but not for the chosen model is a 400 with code 20016; fields unknown to
  the whole API are ignored; a null value counts as absent.
- Text models accept `content` as a string or an array of text parts; media parts need a multimodal model.
- The role `tool` (OpenAI) is accepted by models that support tools, after an assistant message with tool_calls.
- Media parts must be base64 `data:` URIs: the local API never fetches remote addresses (no SSRF).
- `n` is at most 8. `max_tokens` bounds the answer; reasoning is bounded by `thinking_budget` instead.
  `max_tokens` above the model's max_output is a 400; without it, the answer may use
  min(max_output, context window - input tokens).
- temperature 0-2, top_p (0, 1], top_k -1-100 (-1 or 0 disable it), frequency/presence penalty -2-2.
"""

import asyncio
import dataclasses
import hashlib
import json
import re
import time
import uuid
from dataclasses import dataclass, field

from playground.localapi.engines import generator, media
from playground.localapi.engines.generator import Answer, Message, PromptCache, script
from playground.localapi.registry import ALL_CHAT_PARAMS, LocalModel, get_model
from playground.localapi.tokens import count_tokens, split_tokens

UNKNOWN_MODEL = 20012
INVALID = 20015
UNSUPPORTED = 20016
MAX_N = 8
ROLES = ("user", "assistant", "system")
FUNCTION_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
EFFORT = {"low": "high", "medium": "high", "high": "high", "xhigh": "max", "max": "max"}

prompt_cache = PromptCache()


class InvalidRequest(Exception):
    def __init__(self, message: str, code: int = INVALID, status: int = 400):
        super().__init__(message)
        self.message, self.code, self.status = message, code, status


@dataclass
class Prepared:
    model: LocalModel
    request: generator.Request
    stream: bool
    n: int
    stop: list[str]
    max_tokens: int
    prompt_tokens: int
    prefixes: list[tuple[str, int]]
    include_usage: bool = True
    media_parts: list[tuple[str, str, dict]] = field(default_factory=list)


@dataclass
class Choice:
    index: int
    answer: Answer
    finish_reason: str


# ---------------------------------------------------------------- validation helpers


def _number(body, name, low=None, high=None, *, low_open=False, integer=False):
    value = body.get(name)
    if value is None:
        return None
    kind = "an integer" if integer else "a number"
    if isinstance(value, bool) or not isinstance(value, int | float) or (integer and not isinstance(value, int)):
        raise InvalidRequest(f"{name}: must be {kind}")
    if integer and isinstance(value, float) and not value.is_integer():
        raise InvalidRequest(f"{name}: must be {kind}")
    too_low = low is not None and (value <= low if low_open else value < low)
    if too_low or (high is not None and value > high):
        left = "(" if low_open else "["
        bounds = f"{left}{low}, {high}]" if high is not None else f"at least {low}"
        raise InvalidRequest(f"{name}: {value} is out of range; allowed {bounds}")
    return value


def _check_supported(body: dict, model: LocalModel) -> None:
    for name in sorted(ALL_CHAT_PARAMS):
        if body.get(name) is not None and not model.supports(name):
            raise InvalidRequest(f"{name}: not supported by model {model.id}", UNSUPPORTED)


def _validate_tools(body: dict) -> list[dict]:
    tools = body.get("tools")
    if tools is None:
        return []
    if not isinstance(tools, list):
        raise InvalidRequest("tools: must be an array of tools")
    if len(tools) > 128:
        raise InvalidRequest(f"tools: at most 128 functions (got {len(tools)})")
    functions, names = [], set()
    for i, tool in enumerate(tools):
        where = f"tools[{i}]"
        if not isinstance(tool, dict):
            raise InvalidRequest(f"{where}: must be an object")
        if tool.get("type") != "function":
            raise InvalidRequest(f"{where}.type: must be 'function'")
        function = tool.get("function")
        if not isinstance(function, dict):
            raise InvalidRequest(f"{where}.function: required object")
        name = function.get("name")
        if not isinstance(name, str) or not FUNCTION_NAME.match(name):
            raise InvalidRequest(
                f"{where}.function.name: must be 1 to 64 characters among a-z, A-Z, 0-9, underscore and dash"
            )
        if name in names:
            raise InvalidRequest(f"{where}.function.name: duplicate function name {name!r}")
        names.add(name)
        if function.get("description") is not None and not isinstance(function["description"], str):
            raise InvalidRequest(f"{where}.function.description: must be a string")
        parameters = function.get("parameters")
        if parameters is not None and not isinstance(parameters, dict):
            raise InvalidRequest(f"{where}.function.parameters: must be a JSON-schema object")
        if function.get("strict") is not None and not isinstance(function["strict"], bool):
            raise InvalidRequest(f"{where}.function.strict: must be a boolean or null")
        functions.append({"name": name, "description": function.get("description") or "", "parameters": parameters})
    choice = body.get("tool_choice")
    if choice is not None:
        if isinstance(choice, str):
            if choice not in ("auto", "none", "required"):
                raise InvalidRequest("tool_choice: must be 'auto', 'none', 'required' or a function object")
        elif isinstance(choice, dict):
            name = (choice.get("function") or {}).get("name") if isinstance(choice.get("function"), dict) else None
            if choice.get("type") != "function" or name not in names:
                raise InvalidRequest("tool_choice.function.name: must name one of the defined tools")
        else:
            raise InvalidRequest("tool_choice: must be 'auto', 'none', 'required' or a function object")
    return functions


def _validate_part(part, where: str, model: LocalModel, media_parts: list) -> str:
    """Check one content part; queue its media for decoding; return its text (or "")."""
    if not isinstance(part, dict):
        raise InvalidRequest(f"{where}: must be an object with a type")
    kind = part.get("type")
    if kind == "text":
        if not isinstance(part.get("text"), str):
            raise InvalidRequest(f"{where}.text: required string")
        return part["text"]
    if kind not in ("image_url", "audio_url", "video_url"):
        raise InvalidRequest(f"{where}.type: must be one of text, image_url, audio_url, video_url")
    medium = kind.removesuffix("_url")
    if not model.multimodal or medium not in model.inputs:
        accepted = ", ".join(model.inputs)
        raise InvalidRequest(
            f"{where}.type: {kind} is not supported by model {model.id} (inputs: {accepted})", UNSUPPORTED
        )
    spec = part.get(kind)
    if not isinstance(spec, dict):
        raise InvalidRequest(f"{where}.{kind}: required object with a url")
    url = spec.get("url")
    if not isinstance(url, str) or not url:
        raise InvalidRequest(f"{where}.{kind}.url: required string")
    if "detail" in spec and spec["detail"] is not None:
        if kind == "audio_url":
            raise InvalidRequest(f"{where}.audio_url.detail: not a field of audio_url", UNSUPPORTED)
        if not model.capabilities.get("detail"):
            raise InvalidRequest(
                f"{where}.{kind}.detail: not supported by model {model.id} (it uses a fixed resolution mode)",
                UNSUPPORTED,
            )
        if spec["detail"] not in ("auto", "low", "high"):
            raise InvalidRequest(f"{where}.{kind}.detail: must be one of auto, low, high")
    options = {}
    if kind == "video_url":
        for name in ("max_frams", "fps"):
            options[name] = _number(spec, name, 1, None, integer=True)
        if spec.get("max_frames") is not None:
            raise InvalidRequest(f"{where}.video_url.max_frames: unknown field; the spec spells it max_frams")
    if not url.startswith("data:"):
        if model.capabilities.get("base64_images_only"):
            raise InvalidRequest(f"{where}.{kind}.url: model {model.id} accepts base64 image data only")
        raise InvalidRequest(
            f"{where}.{kind}.url: the local API accepts data: URIs only (it never fetches remote addresses)"
        )
    media_parts.append((where, medium, url, options))
    return ""


def _validate_messages(body: dict, model: LocalModel, tools: list[dict]) -> tuple[list[dict], list]:
    messages = body.get("messages")
    if messages is None:
        raise InvalidRequest("messages: required (1 to 10 messages)")
    if not isinstance(messages, list):
        raise InvalidRequest("messages: must be an array of 1 to 10 messages")
    if not 1 <= len(messages) <= 10:
        raise InvalidRequest(f"messages: must hold 1 to 10 messages (got {len(messages)})")
    roles = ROLES + (("tool",) if model.supports("tools") else ())
    parsed, media_parts = [], []
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(message, dict):
            raise InvalidRequest(f"{where}: must be an object with role and content")
        role = message.get("role", "user")
        if role not in roles:
            raise InvalidRequest(f"{where}.role: must be one of {', '.join(roles)} for model {model.id}")
        content = message.get("content")
        tool_calls = message.get("tool_calls") if role == "assistant" else None
        well_formed = isinstance(tool_calls, list) and all(
            isinstance(c, dict) and isinstance(c.get("function"), dict) for c in tool_calls
        )
        if tool_calls is not None and not well_formed:
            raise InvalidRequest(f"{where}.tool_calls: must be an array of {{id, type, function}} objects")
        if content is None and tool_calls:
            content = ""
        if isinstance(content, str):
            text = content
        elif isinstance(content, list):
            if not content:
                raise InvalidRequest(f"{where}.content: must hold at least 1 content part")
            texts = [_validate_part(p, f"{where}.content[{j}]", model, media_parts) for j, p in enumerate(content)]
            text = "\n".join(t for t in texts if t)
        else:
            raise InvalidRequest(f"{where}.content: required string or array of content parts")
        if role == "tool" and not isinstance(content, str):
            raise InvalidRequest(f"{where}.content: a tool message's content must be a string")
        parsed.append(
            {
                "role": role,
                "text": text,
                "tool_calls": tool_calls or [],
                "tool_call_id": message.get("tool_call_id"),
                "index": i,
            }
        )
    if parsed[-1]["role"] == "assistant" and not parsed[-1]["text"]:
        raise InvalidRequest(f"messages[{len(parsed) - 1}]: the last message must not be an empty assistant message")
    return parsed, media_parts


def _validate_stop(body: dict) -> list[str]:
    stop = body.get("stop")
    if stop is None:
        return []
    if isinstance(stop, str):
        stop = [stop]
    if not isinstance(stop, list) or not all(isinstance(s, str) for s in stop):
        raise InvalidRequest("stop: must be a string, an array of 1 to 4 strings, or null")
    if len(stop) > 4:
        raise InvalidRequest(f"stop: at most 4 stop sequences (got {len(stop)})")
    if any(not s for s in stop):
        raise InvalidRequest("stop: stop sequences must not be empty strings")
    return stop


def validate(body: dict) -> tuple[LocalModel, dict]:
    """Everything that can be checked without decoding media; returns the model and the cleaned values."""
    model_id = body.get("model")
    if model_id is None or model_id == "":
        raise InvalidRequest("model: required")
    if not isinstance(model_id, str):
        raise InvalidRequest("model: must be a string")
    model = get_model(model_id)
    if model is None or model.kind != "chat":
        raise InvalidRequest(f"model: model {model_id!r} does not exist", UNKNOWN_MODEL)
    if model.needs_verification:
        raise InvalidRequest(
            f"Forbidden: model {model.id} requires real-name verification, which this account has not completed.",
            status=403,
        )
    _check_supported(body, model)
    stream = body.get("stream")
    if stream is not None and not isinstance(stream, bool):
        raise InvalidRequest("stream: must be a boolean")
    clean = {"stream": bool(stream)}
    stream_options = body.get("stream_options")
    if stream_options is not None and not isinstance(stream_options, dict):
        raise InvalidRequest("stream_options: must be an object")
    max_tokens = _number(body, "max_tokens", 1, None, integer=True)
    if max_tokens is None:
        max_tokens = _number(body, "max_completion_tokens", 1, None, integer=True)
    if max_tokens is not None and max_tokens > model.max_output:
        raise InvalidRequest(
            f"max_tokens: {max_tokens} exceeds the maximum output of model {model.id} ({model.max_output})"
        )
    clean["max_tokens"] = max_tokens
    if body.get("enable_thinking") is not None and not isinstance(body["enable_thinking"], bool):
        raise InvalidRequest("enable_thinking: must be a boolean")
    clean["thinking_budget"] = _number(body, "thinking_budget", 128, 32768, integer=True) or 4096
    effort = body.get("reasoning_effort")
    if effort is not None:
        if effort not in EFFORT:
            raise InvalidRequest(
                "reasoning_effort: must be one of high, max (low and medium map to high, xhigh maps to max)"
            )
        effort = EFFORT[effort]
    clean["reasoning_effort"] = effort
    clean["min_p"] = _number(body, "min_p", 0, 1) or 0.0
    temperature = _number(body, "temperature", 0, 2)
    clean["temperature"] = 0.7 if temperature is None else temperature
    top_p = _number(body, "top_p", 0, 1, low_open=True)
    clean["top_p"] = 0.7 if top_p is None else top_p
    top_k = _number(body, "top_k", -1, 100)
    clean["top_k"] = 50 if top_k is None or top_k <= 0 else top_k
    frequency_penalty = _number(body, "frequency_penalty", -2, 2)
    clean["frequency_penalty"] = (0.5 if model.multimodal else 0.0) if frequency_penalty is None else frequency_penalty
    _number(body, "presence_penalty", -2, 2)
    n = _number(body, "n", 1, MAX_N, integer=True)
    clean["n"] = n or 1
    seed = body.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise InvalidRequest("seed: must be an integer")
    clean["seed"] = seed
    response_format = body.get("response_format")
    json_mode = False
    if response_format is not None:
        if not isinstance(response_format, dict) or not isinstance(response_format.get("type"), str):
            raise InvalidRequest("response_format: must be an object with a type (text or json_object)")
        if response_format["type"] not in ("text", "json_object"):
            raise InvalidRequest(
                f"response_format.type: {response_format['type']!r} is not supported; use text or json_object"
            )
        json_mode = response_format["type"] == "json_object"
    clean["json_mode"] = json_mode
    clean["stop"] = _validate_stop(body)
    if body.get("user") is not None and not isinstance(body["user"], str):
        raise InvalidRequest("user: must be a string")
    clean["tools"] = _validate_tools(body)
    clean["tool_choice"] = body.get("tool_choice") or "auto"
    clean["messages"], clean["media_parts"] = _validate_messages(body, model, clean["tools"])
    thinking = model.capabilities.get("reasoning", False) and body.get("enable_thinking", True) is not False
    clean["thinking"] = bool(thinking)
    if thinking and model.supports("reasoning_effort") and effort is None:
        clean["reasoning_effort"] = "high"
    clean["include_usage"] = True
    return model, clean


def _decode_all(media_parts: list) -> dict[str, generator.Media]:
    decoded = {}
    for where, medium, url, options in media_parts:
        try:
            decoded[where] = media.describe(medium, url, pdf=bool(options.get("pdf")), **_video(options))
        except media.MediaError as exc:
            raise InvalidRequest(f"{where}: {exc}") from exc
    return decoded


def _video(options: dict) -> dict:
    return {k: options[k] for k in ("fps", "max_frams") if k in options}


def _message_tokens(message: Message) -> int:
    tokens = 4 + count_tokens(message.text) + sum(m.tokens for m in message.media)
    for call in message.tool_calls:
        function = call.get("function") or {}
        tokens += count_tokens(str(function.get("name", ""))) + count_tokens(str(function.get("arguments", "")))
    return tokens


async def prepare(body: dict, script_header: str | None = None) -> Prepared:
    """Validate a request (and its script: directives, `X-Local-Script`) and decode its media (in a thread);
    raises InvalidRequest."""
    model, clean = validate(body)
    try:
        stated = script.for_request(clean["messages"], clean["tools"], script_header)
    except script.ScriptError as exc:
        raise InvalidRequest(str(exc)) from exc
    media_parts = [
        (where, medium, url, {**options, "pdf": model.capabilities.get("pdf", False)})
        for where, medium, url, options in clean["media_parts"]
    ]
    decoded = await asyncio.to_thread(_decode_all, media_parts) if media_parts else {}
    messages = []
    for raw in clean["messages"]:
        prefix = f"messages[{raw['index']}].content["
        items = [m for where, m in decoded.items() if where.startswith(prefix)]
        messages.append(
            Message(
                role=raw["role"],
                text=script.clean(raw["text"]),
                media=items,
                tool_calls=raw["tool_calls"],
                tool_call_id=raw["tool_call_id"],
            )
        )
    tools_tokens = count_tokens(json.dumps(clean["tools"])) if clean["tools"] else 0
    prompt_tokens, prefixes, running = 3 + tools_tokens, [], hashlib.sha256(model.id.encode())
    for message in messages:
        prompt_tokens += _message_tokens(message)
        running.update(json.dumps([message.role, message.text, [m.summary for m in message.media]]).encode())
        prefixes.append((running.hexdigest(), prompt_tokens))
    room = model.context_window - prompt_tokens
    if clean["max_tokens"] is not None and prompt_tokens + clean["max_tokens"] > model.context_window:
        raise InvalidRequest(
            f"max_tokens: input tokens ({prompt_tokens}) + max_tokens ({clean['max_tokens']}) = "
            f"{prompt_tokens + clean['max_tokens']} exceed the context window of model {model.id} "
            f"({model.context_window} tokens)"
        )
    if room < 1:
        raise InvalidRequest(
            f"messages: input tokens ({prompt_tokens}) exceed the context window of model {model.id} "
            f"({model.context_window} tokens)"
        )
    request = generator.Request(
        model=model.id,
        messages=messages,
        tools=clean["tools"],
        tool_choice=clean["tool_choice"],
        seed=clean["seed"],
        temperature=clean["temperature"],
        top_p=clean["top_p"],
        top_k=clean["top_k"],
        min_p=clean["min_p"],
        frequency_penalty=clean["frequency_penalty"],
        thinking=clean["thinking"],
        thinking_budget=clean["thinking_budget"],
        reasoning_effort=clean["reasoning_effort"],
        json_mode=clean["json_mode"],
        script=stated,
    )
    return Prepared(
        model=model,
        request=request,
        stream=clean["stream"],
        n=clean["n"],
        stop=clean["stop"],
        max_tokens=clean["max_tokens"] or min(model.max_output, room),
        prompt_tokens=prompt_tokens,
        prefixes=prefixes,
    )


# ---------------------------------------------------------------- generation


def cut(content: str, stop: list[str], max_tokens: int) -> tuple[str, str]:
    """Apply stop sequences (never included) then max_tokens; returns (content, finish_reason)."""
    finish = "stop"
    positions = [content.find(s) for s in stop if s in content]
    if positions:
        content = content[: min(positions)]
    pieces = split_tokens(content)
    if sum(1 for p in pieces if not p.isspace()) > max_tokens:
        content, finish = "".join(pieces[:max_tokens]), "length"
    return content, finish


def run(prepared: Prepared) -> list[Choice]:
    choices = []
    for index in range(prepared.n):
        answer = generator.generate(prepared.request, index)
        if answer.tool_calls and not answer.content:
            choices.append(Choice(index, answer, "tool_calls"))
            continue
        content, finish = cut(answer.content, prepared.stop, prepared.max_tokens)
        finish = "tool_calls" if answer.tool_calls else finish
        choices.append(Choice(index, dataclasses.replace(answer, content=content), finish))
    return choices


def usage(prepared: Prepared, choices: list[Choice], cached: int) -> dict:
    reasoning = sum(count_tokens(c.answer.reasoning) for c in choices)
    completion = reasoning
    for c in choices:
        completion += count_tokens(c.answer.content)
        for call in c.answer.tool_calls:
            completion += count_tokens(call["function"]["name"]) + count_tokens(call["function"]["arguments"])
    prompt = prepared.prompt_tokens
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_cache_hit_tokens": cached,
        "prompt_cache_miss_tokens": prompt - cached,
        "prompt_tokens_details": {"cached_tokens": cached},
        "completion_tokens_details": {"reasoning_tokens": reasoning},
    }


def fingerprint(model: LocalModel) -> str:
    return "fp_local_" + hashlib.sha256(model.id.encode()).hexdigest()[:10]


def completion_id() -> str:
    return "chatcmpl-" + uuid.uuid4().hex


def message_of(model: LocalModel, choice: Choice) -> dict:
    message = {"role": "assistant", "content": choice.answer.content}
    if model.capabilities.get("reasoning"):
        message["reasoning_content"] = choice.answer.reasoning or None
    if choice.answer.tool_calls:
        message["tool_calls"] = choice.answer.tool_calls
    return message


def completion(prepared: Prepared, choices: list[Choice], usage_: dict) -> dict:
    return {
        "id": completion_id(),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": prepared.model.id,
        "choices": [
            {
                "index": c.index,
                "message": message_of(prepared.model, c),
                "finish_reason": c.finish_reason,
                "logprobs": None,
            }
            for c in choices
        ],
        "usage": usage_,
        "system_fingerprint": fingerprint(prepared.model),
    }


def pieces(text: str, chunks: int | None = None) -> list[str]:
    """`text` as streamed: one token per piece, or `chunks` pieces of about equal numbers of tokens."""
    tokens = split_tokens(text)
    if not chunks or not tokens:
        return tokens
    chunks = min(chunks, len(tokens))
    bounds = [len(tokens) * k // chunks for k in range(chunks + 1)]
    return ["".join(tokens[bounds[k] : bounds[k + 1]]) for k in range(chunks)]


def chunk_deltas(model: LocalModel, choice: Choice):
    """The deltas of one choice, one token each (or in the script's number of chunks): role, reasoning,
    content, then tool calls."""
    reasoning_model = bool(model.capabilities.get("reasoning"))
    answer = choice.answer
    role = {"role": "assistant", "content": ""}
    if reasoning_model:
        role["reasoning_content"] = None
    yield role
    for piece in pieces(answer.reasoning, answer.chunks):
        yield {"content": None, "reasoning_content": piece}
    for piece in pieces(answer.content, answer.chunks):
        delta = {"content": piece}
        if reasoning_model:
            delta["reasoning_content"] = None
        yield delta
    for i, call in enumerate(answer.tool_calls):
        function = {"name": call["function"]["name"], "arguments": ""}
        head = {"index": i, "id": call["id"], "type": "function", "function": function}
        yield {"content": None, "tool_calls": [head]}
        for piece in pieces(call["function"]["arguments"], answer.chunks):
            yield {"content": None, "tool_calls": [{"index": i, "function": {"arguments": piece}}]}
