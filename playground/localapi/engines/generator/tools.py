"""Tool calls: which declared function a message asks for and arguments filled from its words; scripted calls;
and the answer after a tool result."""

import hashlib
import json
import re

from playground.localapi.engines.generator.sampler import Sampler
from playground.localapi.engines.generator.shapes import Request
from playground.localapi.engines.generator.text import STOPWORDS, clip, keywords


def tool_call_for(request: Request, text: str, sampler: Sampler) -> dict | None:
    tools = request.tools
    choice = request.tool_choice
    if not tools or choice == "none":
        return None
    chosen = None
    if isinstance(choice, dict):
        name = (choice.get("function") or {}).get("name")
        chosen = next((t for t in tools if t.get("name") == name), None)
    if chosen is None:
        low = text.lower()
        scored = []
        for tool in tools:
            name = tool.get("name", "")
            score = 10 if name.lower() in low or name.lower().replace("_", " ").replace("-", " ") in low else 0
            score += sum(2 for part in re.split(r"[_\-]", name.lower()) if len(part) >= 4 and part in low)
            score += sum(1 for w in keywords(tool.get("description") or "", 12) if re.search(rf"\b{re.escape(w)}", low))
            scored.append((score, tool))
        best = max(scored, key=lambda s: s[0])
        if best[0] > 0:
            chosen = best[1]
        elif choice == "required":
            chosen = tools[0]
    if chosen is None:
        return None
    arguments = fill_arguments(chosen.get("parameters") or {}, text)
    digest = hashlib.sha256(f"{chosen['name']}{arguments}{sampler.rng.random()}".encode()).hexdigest()
    return {
        "id": f"call_{digest[:24]}",
        "type": "function",
        "function": {"name": chosen["name"], "arguments": json.dumps(arguments, ensure_ascii=False)},
    }


def _schema_type(schema: dict) -> str:
    kind = schema.get("type", "string")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if "enum" in schema and "type" not in schema:
        return "enum"
    return kind


class _Slots:
    """Values found in a message, consumed in order by the schema's properties."""

    def __init__(self, text: str):
        self.text = text
        self.quoted = [next(g for g in q if g) for q in re.findall(r"\"([^\"]+)\"|“([^”]+)”|'([^']+)'", text)]
        unquoted = re.sub(r"\"[^\"]*\"|“[^”]*”|'[^']+'", " ", text)
        self.numbers = [float(n) for n in re.findall(r"-?\d+(?:\.\d+)?", unquoted)]
        names = re.findall(
            r"\b(?:in|for|at|of|to|from|about|near|called|named)\s+((?:[A-Z][\w'-]*)(?:\s+[A-Z][\w'-]*)*)", unquoted
        )
        first = re.match(r"\s*\W*(\w+)", unquoted)
        capitalised = [
            w
            for w in re.findall(r"\b[A-Z][\w'-]+(?:\s+[A-Z][\w'-]+)*", unquoted)
            if not (first and w.split()[0] == first.group(1)) and w.lower() not in STOPWORDS
        ]
        self.names = list(dict.fromkeys(names + capitalised))

    def string(self) -> str | None:
        if self.quoted:
            return self.quoted.pop(0)
        if self.names:
            return self.names.pop(0)
        return None

    def number(self) -> float | None:
        return self.numbers.pop(0) if self.numbers else None


def fill_arguments(schema: dict, text: str, slots: _Slots | None = None) -> dict:
    """Arguments valid against an object schema, filled from the message where it offers values."""
    slots = slots or _Slots(text)
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    low = text.lower()
    result = {}
    for name, prop in properties.items():
        prop = prop if isinstance(prop, dict) else {}
        kind = _schema_type(prop)
        found = True
        if prop.get("enum"):
            mentioned = [v for v in prop["enum"] if isinstance(v, str) and v.lower() in low]
            value = mentioned[0] if mentioned else prop.get("default", prop["enum"][0])
            found = bool(mentioned)
        elif kind in ("integer", "number"):
            number = slots.number()
            found = number is not None
            if number is None:
                number = prop.get("default", prop.get("minimum", 0))
            if "minimum" in prop:
                number = max(number, prop["minimum"])
            if "maximum" in prop:
                number = min(number, prop["maximum"])
            value = int(number) if kind == "integer" else number
        elif kind == "boolean":
            value = bool(re.search(r"\b(true|yes|enable|enabled|on)\b", low))
            found = value or bool(re.search(r"\b(false|no|disable|disabled|off)\b", low))
        elif kind == "array":
            item_kind = _schema_type(prop.get("items") or {})
            if item_kind in ("integer", "number"):
                value = [int(n) if item_kind == "integer" else n for n in slots.numbers]
                slots.numbers = []
            else:
                value = slots.quoted + slots.names
                slots.quoted, slots.names = [], []
            found = bool(value)
        elif kind == "object":
            value = fill_arguments(prop, text, slots)
            found = bool(value)
        else:
            value = slots.string()
            found = value is not None
            if value is None:
                value = prop.get("default") or clip(" ".join(keywords(text, 6)) or text, 100)
            if isinstance(prop.get("maxLength"), int):
                value = value[: prop["maxLength"]]
        if found or name in required:
            result[name] = value
    return result


def tool_result_answer(request: Request) -> str:
    last = request.messages[-1]
    name = "the tool"
    for message in reversed(request.messages):
        for call in message.tool_calls:
            if call.get("id") == last.tool_call_id:
                name = f"`{call['function']['name']}`"
    try:
        result = json.loads(last.text)
    except ValueError:
        return f"According to {name}: {clip(last.text, 400)}"
    if isinstance(result, dict):
        facts = ", ".join(f"**{k}**: {json.dumps(v, ensure_ascii=False)}" for k, v in list(result.items())[:12])
        return f"According to {name}, {facts}."
    return f"According to {name}: {json.dumps(result, ensure_ascii=False)}."


def scripted_calls(calls: list[dict], index: int) -> list[dict]:
    """The tool calls a script states, with ids that are stable for the same request and choice."""
    result = []
    for position, call in enumerate(calls):
        arguments = json.dumps(call["arguments"], ensure_ascii=False)
        digest = hashlib.sha256(f"{call['name']}{arguments}{index}:{position}".encode()).hexdigest()
        result.append(
            {
                "id": call.get("id") or f"call_{digest[:24]}",
                "type": "function",
                "function": {"name": call["name"], "arguments": arguments},
            }
        )
    return result
