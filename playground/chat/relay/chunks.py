"""What a provider's answer says, read apart from the relay that streams it: a tool call assembled from its
streamed fragments, and the parts of a whole (non-streamed) response."""

from dataclasses import dataclass, field


def merge_tool_call(calls: dict[int, dict], fragment: dict) -> None:
    """Add a streamed fragment to `calls` (by index). OpenAI-style streams send the id and name once, then only the
    index and fragments of the arguments."""
    empty = {"id": "", "type": "function", "function": {"name": "", "arguments": ""}}
    slot = calls.setdefault(fragment.get("index", len(calls)), empty)
    # The first id wins: some providers repeat an id (or a fresh one) on later fragments.
    slot["id"] = slot["id"] or fragment.get("id") or ""
    function = fragment.get("function") or {}
    slot["function"]["name"] += function.get("name") or ""
    slot["function"]["arguments"] += function.get("arguments") or ""


@dataclass
class WholeAnswer:
    usage: dict | None = None
    finish_reason: str = ""
    content: str = ""
    reasoning: str = ""
    tool_calls: dict[int, dict] = field(default_factory=dict)
    extra: dict[int, list[str]] = field(default_factory=dict)  # the other choices (n > 1)


def whole_answer(data: dict) -> WholeAnswer:
    """The parts of a non-streamed chat completion."""
    answer = WholeAnswer(usage=data.get("usage") if isinstance(data.get("usage"), dict) else None)
    for choice in data.get("choices") or []:
        message = choice.get("message") or {}
        if (choice.get("index") or 0) == 0:
            answer.finish_reason = choice.get("finish_reason") or ""
            answer.tool_calls = dict(enumerate(message.get("tool_calls") or []))
            answer.content, answer.reasoning = message.get("content") or "", message.get("reasoning_content") or ""
        else:
            answer.extra[choice["index"]] = [message.get("content") or ""]
    return answer
