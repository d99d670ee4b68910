"""Validation of a chat completion request (spec 2.1-2.4, 8): the model, its parameters, messages, tools, stop."""

import re

from playground.localapi.registry import ALL_CHAT_PARAMS, LocalModel, get_model

UNKNOWN_MODEL = 20012
INVALID = 20015
UNSUPPORTED = 20016
MAX_N = 8
ROLES = ("user", "assistant", "system")
FUNCTION_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
EFFORT = {"low": "high", "medium": "high", "high": "high", "xhigh": "max", "max": "max"}


class InvalidRequest(Exception):
    def __init__(self, message: str, code: int = INVALID, status: int = 400):
        super().__init__(message)
        self.message, self.code, self.status = message, code, status


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
        if not url.lower().startswith(("http://", "https://")):
            raise InvalidRequest(f"{where}.{kind}.url: must be a base64 data: URI or an http:// or https:// address")
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


def _validate_stop(body: dict, model: LocalModel) -> list[str]:
    stop = body.get("stop")
    if stop is None:
        return []
    if isinstance(stop, str):
        stop = [stop]
    if not isinstance(stop, list) or not all(isinstance(s, str) for s in stop):
        raise InvalidRequest("stop: must be a string, an array of 1 to 4 strings, or null")
    # Text models take "an array of 1 to 4 strings" (spec 2.1); the multimodal variant's default is [] (2.2).
    if not stop and not model.multimodal:
        raise InvalidRequest(f"stop: an array of stop sequences must hold 1 to 4 strings for model {model.id} (got [])")
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
    clean["stop"] = _validate_stop(body, model)
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
