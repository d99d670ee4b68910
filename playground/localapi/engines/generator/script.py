"""The script: what a test (or a demo) states the local model will answer, instead of its canned rules.

Directives are written in the last user message as `[name:value]` (names are case-insensitive; the value may
hold balanced brackets, such as a markdown link). They are stripped from every message before the model reads
it, so they are never echoed. The same script can come as JSON in the `X-Local-Script` request header, for
tests that cannot put directives in the user's text; the header's fields replace the directives' ones.

    directive                     header field                      behaviour
    [say:TEXT]                    "say": "TEXT" or ["A", "B"]       the answer is exactly TEXT (several: the
                                                                    choices' answers in turn, for n > 1)
    [think:TEXT]                  "think": "TEXT" or [...]          the reasoning of a reasoning model (several:
                                                                    one per choice in turn)
    [call:NAME {"k": "v"}]        "calls": [{"name", "arguments",   a call of the request's tool NAME with those
                                             "id"?}]               arguments; several make parallel calls
    [chunks:N]                    "chunks": N                       a stream sends each text in N chunks
    [fault:VALUE]                 (X-Local-Fault header)            the HTTP layer's fault switch (http.fault_for)

Stop sequences, max_tokens and thinking_budget still apply to scripted text, as they would to a real model.
"""

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field

MAX_CHUNKS = 100_000
_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_FAULT_VALUE = re.compile(r"^[a-z0-9.\-]+$", re.IGNORECASE)


class ScriptError(ValueError):
    """A directive or header the model cannot follow; the message names it."""


@dataclass
class Script:
    say: list[str] = field(default_factory=list)
    think: list[str] = field(default_factory=list)
    calls: list[dict] = field(default_factory=list)  # {name, arguments (dict), id (optional), where}
    chunks: int | None = None
    fault: str | None = None

    def pick(self, texts: list[str], index: int) -> str | None:
        """The text of choice `index`: several texts go to the choices in turn."""
        return texts[index % len(texts)] if texts else None


def _chunks(value: str, where: str) -> int:
    if not value.strip().isdigit() or not 1 <= int(value) <= MAX_CHUNKS:
        raise ScriptError(f"{where}: must be a whole number from 1 to {MAX_CHUNKS}")
    return int(value)


def _call(value: str, where: str) -> dict:
    name, raw = re.match(r"\s*([^\s{]*)(.*)", value, re.S).groups()
    if not _NAME.match(name):
        raise ScriptError(f"{where}: must start with a function name (1 to 64 of a-z, A-Z, 0-9, _ and -)")
    try:
        arguments = json.loads(raw) if raw.strip() else {}
    except ValueError as exc:
        raise ScriptError(f"{where}: the arguments after {name} must be a JSON object ({exc})") from exc
    if not isinstance(arguments, dict):
        raise ScriptError(f"{where}: the arguments after {name} must be a JSON object")
    return {"name": name, "arguments": arguments, "where": where}


def _say(script, value, where):
    script.say.append(value)


def _think(script, value, where):
    script.think.append(value)


def _add_call(script, value, where):
    script.calls.append(_call(value, where))


def _set_chunks(script, value, where):
    script.chunks = _chunks(value, where)


def _fault(script, value, where):
    script.fault = value.lower()


# Directive name → what it does to the script.
DIRECTIVES: dict[str, Callable[[Script, str, str], None]] = {
    "say": _say,
    "think": _think,
    "call": _add_call,
    "chunks": _set_chunks,
    "fault": _fault,
}
_OPENING = re.compile(r"\[(" + "|".join(DIRECTIVES) + r"):", re.IGNORECASE)


def _pairs(text: str) -> dict[int, int]:
    """The position of each `[` that is closed → that of its `]` (one pass, so long texts stay cheap)."""
    pairs, opened = {}, []
    for i, char in enumerate(text):
        if char == "[":
            opened.append(i)
        elif char == "]" and opened:
            pairs[opened.pop()] = i
    return pairs


def _scan(text: str):
    """(name, value, start, end) of each directive in `text`."""
    pairs, position = _pairs(text), 0
    while match := _OPENING.search(text, position):
        name, end = match.group(1).lower(), pairs.get(match.start())
        if end is None or (name == "fault" and not _FAULT_VALUE.match(text[match.end() : end])):
            position = match.end()  # an unclosed bracket, or `[fault:` with another value, is plain text
            continue
        yield name, text[match.end() : end], match.start(), end + 1
        position = end + 1


def clean(text: str) -> str:
    """`text` without its directives (what the model reads and may echo)."""
    kept, position = [], 0
    for _, _, start, end in _scan(text or ""):
        kept.append(text[position:start])
        position = end
    kept.append((text or "")[position:])
    return "".join(kept).strip()


def read(text: str) -> Script:
    """The script stated by the directives of `text`; raises ScriptError naming a directive it cannot follow."""
    script = Script()
    for name, value, _, _ in _scan(text or ""):
        DIRECTIVES[name](script, value, f"[{name}:{value}]")
    return script


def fault_directive(text: str) -> str | None:
    """The value of the first `[fault:…]` directive in `text`, lower-cased, if any."""
    return next((value.lower() for name, value, _, _ in _scan(text or "") if name == "fault"), None)


def _texts(value, where: str) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return value
    raise ScriptError(f"{where}: must be a string or a non-empty array of strings")


def from_header(raw: str, script: Script | None = None) -> Script:
    """`script` (or an empty one) with the fields of an `X-Local-Script` header replacing its own."""
    script = script or Script()
    try:
        given = json.loads(raw)
    except ValueError as exc:
        raise ScriptError(f"X-Local-Script: not valid JSON ({exc})") from exc
    if not isinstance(given, dict):
        raise ScriptError("X-Local-Script: must be a JSON object with say, think, calls or chunks")
    unknown = sorted(set(given) - {"say", "think", "calls", "chunks"})
    if unknown:
        raise ScriptError(f"X-Local-Script.{unknown[0]}: unknown field; use say, think, calls or chunks")
    if "say" in given:
        script.say = _texts(given["say"], "X-Local-Script.say")
    if "think" in given:
        script.think = _texts(given["think"], "X-Local-Script.think")
    if "chunks" in given:
        chunks = given["chunks"]
        if isinstance(chunks, bool) or not isinstance(chunks, int):
            raise ScriptError(f"X-Local-Script.chunks: must be a whole number from 1 to {MAX_CHUNKS}")
        script.chunks = _chunks(str(chunks), "X-Local-Script.chunks")
    if "calls" in given:
        script.calls = _header_calls(given["calls"])
    return script


def _header_calls(calls) -> list[dict]:
    if not isinstance(calls, list):
        raise ScriptError("X-Local-Script.calls: must be an array of {name, arguments, id} objects")
    parsed = []
    for i, call in enumerate(calls):
        where = f"X-Local-Script.calls[{i}]"
        if not isinstance(call, dict) or not isinstance(call.get("name"), str) or not _NAME.match(call["name"]):
            raise ScriptError(f"{where}.name: required function name (1 to 64 of a-z, A-Z, 0-9, _ and -)")
        arguments = call.get("arguments", {})
        if not isinstance(arguments, dict):
            raise ScriptError(f"{where}.arguments: must be a JSON object")
        if call.get("id") is not None and not (isinstance(call["id"], str) and call["id"]):
            raise ScriptError(f"{where}.id: must be a non-empty string")
        parsed.append({"name": call["name"], "arguments": arguments, "id": call.get("id"), "where": where})
    return parsed


def check_calls(script: Script, tools: list[dict]) -> None:
    """A scripted call must name one of the request's tools, as a real model's would."""
    names = [tool["name"] for tool in tools]
    for call in script.calls:
        if call["name"] not in names:
            defined = ", ".join(names) or "none"
            raise ScriptError(f"{call['where']}: {call['name']} is not a tool of this request (tools: {defined})")


def for_request(messages: list[dict], tools: list[dict], header: str | None) -> Script:
    """What the last user message's directives and the `X-Local-Script` header state the model will answer.

    `messages` are the validated ones ({role, text, index}). A call stated in the message is made only while
    that message is the last one: after the tool result, the model answers instead of calling again.
    """
    users = [m for m in messages if m["role"] == "user"]
    try:
        stated = read(users[-1]["text"]) if users else Script()
    except ScriptError as exc:
        raise ScriptError(f"messages[{users[-1]['index']}].content: {exc}") from exc
    if users and users[-1] is not messages[-1]:
        stated.calls = []
    if header:
        stated = from_header(header, stated)
    check_calls(stated, tools)
    return stated
