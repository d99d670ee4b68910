"""A validated chat request made into answers: media decoded, the script applied, stop / max_tokens / n, usage,
the completion body and the stream of chunks (spec 6)."""

import asyncio
import dataclasses
import hashlib
import json
import time
import uuid
from dataclasses import dataclass, field
from functools import partial

from django.conf import settings

from playground.lib import fetch
from playground.localapi.engines import generator, media
from playground.localapi.engines.chat.validation import InvalidRequest, validate
from playground.localapi.engines.generator import Answer, Message, PromptCache, script
from playground.localapi.registry import LocalModel
from playground.localapi.tokens import count_tokens, split_tokens

prompt_cache = PromptCache()


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


# What a fetched file's content type must start with, by the kind of its part.
_ACCEPT = {"image": ("image/",), "audio": ("audio/",), "video": ("video/",)}


def _fetch_limits() -> fetch.Limits:
    return fetch.Limits(
        max_bytes=media.MAX_BYTES,
        connect_timeout=settings.LOCAL_API_FETCH_CONNECT_TIMEOUT,
        read_timeout=settings.LOCAL_API_FETCH_READ_TIMEOUT,
        total_timeout=settings.LOCAL_API_FETCH_TOTAL_TIMEOUT,
    )


async def _in_pool(function, *args, **kwargs):
    """Run blocking media work in the media pool, where parallel requests wait for one of its few threads."""
    return await asyncio.get_running_loop().run_in_executor(media.pool(), partial(function, *args, **kwargs))


async def _probe(where: str, medium: str, url: str, options: dict) -> media.Probe:
    """The part's bytes (from its data: URI, or fetched by address through the outbound guard), header read."""
    if url.startswith("data:"):
        try:
            mime, data = await _in_pool(media.decode_data_uri, url)
        except media.MediaError as exc:
            raise InvalidRequest(f"{where}: {exc}") from exc
    else:
        pdf = bool(options.get("pdf"))
        try:
            fetched = await fetch.fetch(
                url, accept=_ACCEPT[medium] + (("application/pdf",) if pdf else ()), limits=_fetch_limits()
            )
        except fetch.FetchError as exc:
            raise InvalidRequest(f"{where}.{medium}_url.url: cannot fetch {_shown(url)}: {exc}") from exc
        mime, data = fetched.content_type, fetched.data
    try:
        return await _in_pool(media.probe, medium, mime, data, pdf=bool(options.get("pdf")), **_video(options))
    except media.MediaError as exc:
        raise InvalidRequest(f"{where}: {exc}") from exc


def _shown(url: str) -> str:
    return url if len(url) <= 200 else url[:200] + "…"


async def _decode(where: str, part: media.Probe) -> generator.Media:
    try:
        return await _in_pool(media.decode, part)
    except media.MediaError as exc:
        raise InvalidRequest(f"{where}: {exc}") from exc


def _video(options: dict) -> dict:
    return {k: options[k] for k in ("fps", "max_frams") if k in options}


def _messages(clean: dict, media_by_part: dict[str, generator.Media]) -> list[Message]:
    messages = []
    for raw in clean["messages"]:
        prefix = f"messages[{raw['index']}].content["
        messages.append(
            Message(
                role=raw["role"],
                text=script.clean(raw["text"]),
                media=[m for where, m in media_by_part.items() if where.startswith(prefix)],
                tool_calls=raw["tool_calls"],
                tool_call_id=raw["tool_call_id"],
            )
        )
    return messages


def _count(model: LocalModel, clean: dict, messages: list[Message]) -> tuple[int, list[tuple[str, int]]]:
    """The prompt's tokens and its cache prefixes; InvalidRequest when they leave no room in the context window."""
    tools_tokens = count_tokens(json.dumps(clean["tools"])) if clean["tools"] else 0
    prompt_tokens, prefixes, running = 3 + tools_tokens, [], hashlib.sha256(model.id.encode())
    for message in messages:
        prompt_tokens += _message_tokens(message)
        running.update(json.dumps([message.role, message.text, [m.summary for m in message.media]]).encode())
        prefixes.append((running.hexdigest(), prompt_tokens))
    if clean["max_tokens"] is not None and prompt_tokens + clean["max_tokens"] > model.context_window:
        raise InvalidRequest(
            f"max_tokens: input tokens ({prompt_tokens}) + max_tokens ({clean['max_tokens']}) = "
            f"{prompt_tokens + clean['max_tokens']} exceed the context window of model {model.id} "
            f"({model.context_window} tokens)"
        )
    if prompt_tokens >= model.context_window:
        raise InvalidRequest(
            f"messages: input tokens ({prompt_tokens}) exceed the context window of model {model.id} "
            f"({model.context_window} tokens)"
        )
    return prompt_tokens, prefixes


def _message_tokens(message: Message) -> int:
    tokens = 4 + count_tokens(message.text) + sum(m.tokens for m in message.media)
    for call in message.tool_calls:
        function = call.get("function") or {}
        tokens += count_tokens(str(function.get("name", ""))) + count_tokens(str(function.get("arguments", "")))
    return tokens


async def prepare(body: dict, script_header: str | None = None) -> Prepared:
    """Validate a request (and its script: directives, `X-Local-Script`), fetch and read its media (headers
    first, then in the media pool); raises InvalidRequest."""
    model, clean = validate(body)
    try:
        stated = script.for_request(clean["messages"], clean["tools"], script_header)
    except script.ScriptError as exc:
        raise InvalidRequest(str(exc)) from exc
    media_parts = [
        (where, medium, url, {**options, "pdf": model.capabilities.get("pdf", False)})
        for where, medium, url, options in clean["media_parts"]
    ]
    probes = {where: await _probe(where, medium, url, options) for where, medium, url, options in media_parts}
    # Tokens are counted from the headers first: a request over the context window is refused before decoding.
    headers_only = {
        w: generator.Media(kind=p.kind, info=p.info, tokens=p.tokens, summary="") for w, p in probes.items()
    }
    _count(model, clean, _messages(clean, headers_only))
    decoded = {where: await _decode(where, part) for where, part in probes.items()}
    messages = _messages(clean, decoded)
    prompt_tokens, prefixes = _count(model, clean, messages)
    room = model.context_window - prompt_tokens
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
        # A string in every message (spec 2.5); only stream deltas may carry null.
        message["reasoning_content"] = choice.answer.reasoning or ""
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
