"""Words, keywords and sentences of a message: the model's reading of text (token counts live in tokens.py)."""

import re

from playground.localapi.engines.generator.shapes import Message

_STOPWORDS = (
    "a about above after again all also am an and any are as at be because been before being below between both "
    "but by can could did do does doing down during each few for from further had has have having he her here "
    "hers him his how i if in into is it its itself just me more most my no nor not now of off on once only or "
    "other our out over own please same she should so some such than that the their them then there these they "
    "this those through to too under until up very was we were what when where which while who whom why will with "
    "would you your yours give tell show write make list count many much words word long answer explain describe "
    "let lets want need like know think say said use using get got onto per via"
)
STOPWORDS = frozenset(_STOPWORDS.split())


def words(text: str) -> list[str]:
    return re.findall(r"[^\W_]+(?:['’-][^\W_]+)*", text)


def keywords(text: str, limit: int = 3) -> list[str]:
    seen: dict[str, int] = {}
    for w in words(text):
        low = w.lower()
        if len(low) >= 4 and low not in STOPWORDS and not low.isdigit():
            seen[low] = seen.get(low, 0) + 1
    return sorted(seen, key=lambda k: (-seen[k], list(seen).index(k)))[:limit]


def sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s.strip()]


def target_text(text: str, history: list[Message]) -> str:
    """The text an instruction like "count the words in ..." is about."""
    quoted = re.findall(r"\"([^\"]+)\"|“([^”]+)”|'([^']{3,})'", text)
    if quoted:
        return " ".join(next(g for g in q if g) for q in quoted)
    fence = re.search(r"```(?:\w+)?\n(.*?)```", text, re.S)
    if fence:
        return fence.group(1)
    if ":" in text:
        after = text.split(":", 1)[1].strip()
        if after:
            return after
    for message in reversed(history[:-1]):
        if message.text.strip() and message.role in ("user", "assistant"):
            return message.text
    return text


def clip(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
