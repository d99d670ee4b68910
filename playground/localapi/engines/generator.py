"""The deterministic local "model": rule-based answers that respond to what the conversation says.

Pure Python, no Django. It is honest about what it is (a local demo model), and it reads the last user
message for a few intents: arithmetic, counting, quoting, summarising, lists, tables, code, long answers,
function calls, media descriptions. The same request (including seed) always gives the same answer;
the seed, the sampling parameters and the choice index vary the wording.
"""

import ast
import hashlib
import json
import math
import operator
import random
import re
from dataclasses import dataclass, field

from playground.localapi.tokens import count_tokens, split_tokens


@dataclass
class Media:
    """A decoded input part: what the bytes really are."""

    kind: str  # image | audio | video | pdf
    info: dict
    tokens: int
    summary: str  # one markdown line describing it
    text: str = ""  # extracted text (pdf)


@dataclass
class Message:
    role: str
    text: str
    media: list[Media] = field(default_factory=list)
    tool_calls: list[dict] = field(default_factory=list)
    tool_call_id: str | None = None


@dataclass
class Request:
    model: str
    messages: list[Message]
    tools: list[dict] = field(default_factory=list)  # function objects {name, description, parameters}
    tool_choice: object = "auto"
    seed: int | None = None
    temperature: float = 0.7
    top_p: float = 0.7
    top_k: float = 50
    min_p: float = 0.0
    frequency_penalty: float = 0.0
    thinking: bool = False
    thinking_budget: int = 4096
    reasoning_effort: str | None = None
    json_mode: bool = False


@dataclass
class Answer:
    content: str
    reasoning: str = ""
    tool_calls: list[dict] = field(default_factory=list)  # {id, type, function: {name, arguments}}


STOPWORDS = set(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "all",
        "also",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "him",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "out",
        "over",
        "own",
        "please",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "give",
        "tell",
        "show",
        "write",
        "make",
        "list",
        "count",
        "many",
        "much",
        "words",
        "word",
        "long",
        "answer",
        "explain",
        "describe",
        "let",
        "lets",
        "want",
        "need",
        "like",
        "know",
        "think",
        "say",
        "said",
        "use",
        "using",
        "get",
        "got",
        "into",
        "onto",
        "per",
        "via",
    ]
)

_INTROS = [
    "Here is my answer, from the local demo model `{model}`.",
    "Local demo model `{model}` here. This is a rule-based answer, not a real language model.",
    "Answer from `{model}` (the playground's built-in demo model):",
    "`{model}` is a local demo model; here is what it can say.",
    "From the local demo model `{model}`:",
    "The local demo model `{model}` answers:",
    "Here is a deterministic answer from `{model}`, the local demo model.",
    "`{model}` (local, rule-based) replies:",
]

_FILLER = [
    "{Topic} is a good subject to look at from more than one side.",
    "A useful first step is to write down what {topic} is for and who relies on it.",
    "Most questions about {topic} become easier once the terms are defined precisely.",
    "It helps to compare {topic} with {other}, because the contrast shows what matters.",
    "Small, measurable experiments tell you more about {topic} than long debates.",
    "When {topic} goes wrong, it is usually because an assumption was never checked.",
    "People who work with {topic} every day tend to keep notes, checklists and examples.",
    "The history of {topic} shows steady improvement rather than sudden leaps.",
    "A simple model of {topic} is often enough to make a good decision.",
    "Costs and benefits of {topic} are rarely spread evenly, which is worth keeping in mind.",
    "Explaining {topic} to someone else is a quick test of whether you understand it.",
    "Good tools make {topic} less error-prone, but they do not replace judgement.",
    "The details of {topic} change over time, while the underlying principles stay put.",
    "Measuring {topic} before and after a change is the honest way to judge it.",
    "There is more than one reasonable way to approach {topic}, and the trade-offs differ.",
    "Writing about {topic} in plain language tends to reveal gaps in the argument.",
]

_HEADINGS = ["Background", "Key ideas", "In practice", "Trade-offs", "Common mistakes", "Examples", "Outlook"]

_VOCAB = {
    "fruit": "apple banana cherry mango orange pear plum kiwi grape peach apricot lemon lime fig papaya melon",
    "colour": "red green blue yellow orange purple pink brown black white grey cyan magenta teal navy olive",
    "color": "red green blue yellow orange purple pink brown black white grey cyan magenta teal navy olive",
    "animal": "cat dog horse cow sheep goat fox wolf bear lion tiger eagle owl dolphin whale rabbit otter",
    "planet": "Mercury Venus Earth Mars Jupiter Saturn Uranus Neptune",
    "countr": "France Japan Brazil Canada Kenya India Norway Chile Egypt Mexico Spain Vietnam Peru Italy Ghana",
    "language": "Python JavaScript Rust Go Java C Kotlin Swift Ruby Haskell Elixir Scala Lua Julia Zig",
    "day": "Monday Tuesday Wednesday Thursday Friday Saturday Sunday",
    "month": "January February March April May June July August September October November December",
    "city": "Paris Tokyo Lagos Lima Oslo Cairo Delhi Sydney Toronto Madrid Seoul Nairobi Berlin Quito Hanoi",
}

_NUMBER_WORDS = {
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "twelve": 12,
    "twenty": 20,
}


class Sampler:
    """Choices among wordings, seeded from the whole request so identical inputs give identical answers."""

    def __init__(self, request: Request, index: int, salt: str = ""):
        self.request = request
        material = json.dumps(
            [
                request.model,
                [(m.role, m.text, [x.summary for x in m.media]) for m in request.messages],
                request.seed,
                request.temperature,
                request.top_p,
                request.top_k,
                request.min_p,
                index,
                salt,
            ],
            default=str,
        )
        self.rng = random.Random(hashlib.sha256(material.encode()).digest())
        self.used: set[str] = set()

    def pick(self, options: list[str]) -> str:
        r = self.request
        if r.temperature == 0:
            pool = options[:1]
        else:
            size = len(options) * r.top_p * (1 - r.min_p) * min(1.0, 0.5 + r.temperature / 2)
            pool = options[: max(1, min(int(r.top_k) or len(options), math.ceil(size)))]
        if r.frequency_penalty > 0:
            fresh = [o for o in pool if o not in self.used] or [o for o in options if o not in self.used]
            pool = fresh or pool
        choice = pool[self.rng.randrange(len(pool))]
        self.used.add(choice)
        return choice


# ---------------------------------------------------------------- text helpers


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


# ---------------------------------------------------------------- arithmetic

_OPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_EXPR = re.compile(r"[-+(]*\s*\d[\d.,]*(?:\s*(?:\*\*|[-+*/%^×÷x])\s*[-+(]*\s*\d[\d.]*\s*\)*)+")


class ArithmeticError_(ValueError):
    pass


def evaluate(expression: str, steps: list[str] | None = None) -> float | int:
    """Evaluate + - * / // % ** on numbers only, without eval(); record each operation in `steps`."""
    tree = ast.parse(expression, mode="eval")

    def walk(node):
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool):
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            value = walk(node.operand)
            return -value if isinstance(node.op, ast.USub) else value
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            left, right = walk(node.left), walk(node.right)
            if isinstance(node.op, ast.Pow) and (abs(right) > 64 or abs(left) > 10**6):
                raise ArithmeticError_("exponent too large")
            try:
                value = _OPS[type(node.op)](left, right)
            except ZeroDivisionError as exc:
                raise ArithmeticError_("division by zero") from exc
            if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
                value = int(value)
            if steps is not None:
                symbol = {ast.Add: "+", ast.Sub: "-", ast.Mult: "×", ast.Div: "÷", ast.FloorDiv: "//"}.get(
                    type(node.op), {ast.Mod: "mod", ast.Pow: "^"}.get(type(node.op), "?")
                )
                steps.append(f"{fmt(left)} {symbol} {fmt(right)} = {fmt(value)}")
            return value
        raise ArithmeticError_("unsupported expression")

    return walk(tree)


def fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.6g}" if abs(value) < 1e15 else f"{value:.6e}"
    return str(value)


def find_expression(text: str) -> str | None:
    low = text.lower()
    for word, symbol in (
        ("multiplied by", "*"),
        ("divided by", "/"),
        ("times", "*"),
        ("plus", "+"),
        ("minus", "-"),
        ("to the power of", "**"),
    ):
        low = low.replace(word, symbol)
    for match in _EXPR.finditer(low):
        expr = match.group(0).strip().replace("×", "*").replace("÷", "/").replace("^", "**").replace(",", "")
        expr = re.sub(r"(?<=\d)\s*x\s*(?=[\d(])", "*", expr)
        if re.search(r"\d\s*(\*\*|[-+*/%])\s*[-+(]*\d", expr):
            return expr.strip()
    return None


# ---------------------------------------------------------------- tools


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


# ---------------------------------------------------------------- intents


def _list_request(text: str) -> tuple[int, str] | None:
    low = text.lower()
    match = re.search(
        r"\b(?:list|name|give(?: me)?|top|write)\s+(\d+|" + "|".join(_NUMBER_WORDS) + r")\s+([\w\s-]+)", low
    )
    if not match:
        match = re.search(r"\blist\s+(?:of\s+)?()([\w\s-]+)", low)
        if not match:
            return None
    raw = match.group(1)
    count = int(raw) if raw.isdigit() else _NUMBER_WORDS.get(raw, 5)
    topic = " ".join(match.group(2).split()[:4]).strip()
    return max(1, min(count, 100)), topic


def _items_for(topic: str, count: int, sampler: Sampler) -> list[str]:
    for stem, vocab in _VOCAB.items():
        if stem in topic:
            pool = vocab.split()
            return [pool[i % len(pool)] + ("" if i < len(pool) else f" ({i // len(pool) + 1})") for i in range(count)]
    base = keywords(topic, 2) or ["idea"]
    adjectives = ["practical", "simple", "surprising", "classic", "modern", "cheap", "careful", "bold", "quiet"]
    start = sampler.rng.randrange(len(adjectives))
    return [f"{adjectives[(start + i) % len(adjectives)].capitalize()} {base[0]} #{i + 1}" for i in range(count)]


def _code(language: str, topic: str) -> str:
    name = re.sub(r"\W+", "_", topic.lower()).strip("_") or "text"
    if language == "javascript":
        return (
            "```javascript\n"
            f"// Count how often each word appears in a text about {topic}.\n"
            "function wordFrequencies(text) {\n"
            "  const counts = new Map();\n"
            "  for (const word of text.toLowerCase().match(/[a-z']+/g) ?? []) {\n"
            "    counts.set(word, (counts.get(word) ?? 0) + 1);\n"
            "  }\n"
            "  return [...counts].sort((a, b) => b[1] - a[1]);\n"
            "}\n\n"
            f'console.log(wordFrequencies("{topic} and more {topic}"));\n'
            "```"
        )
    if language == "sql":
        return (
            "```sql\n"
            f"-- The ten most frequent {topic} entries.\n"
            f"SELECT name, COUNT(*) AS occurrences\nFROM {name}\nGROUP BY name\n"
            "ORDER BY occurrences DESC\nLIMIT 10;\n"
            "```"
        )
    if language == "bash":
        return (
            "```bash\n"
            f"# Count the words of every .txt file about {topic}.\n"
            'for file in *.txt; do\n  printf "%s\\t%s\\n" "$(wc -w < "$file")" "$file"\ndone | sort -rn\n'
            "```"
        )
    return (
        "```python\n"
        "from collections import Counter\n\n\n"
        f"def {name[:30]}_summary(text: str, top: int = 5) -> list[tuple[str, int]]:\n"
        f'    """The most frequent words of a text about {topic}."""\n'
        '    words = [w.strip(".,;:!?").lower() for w in text.split()]\n'
        "    return Counter(w for w in words if w).most_common(top)\n\n\n"
        'if __name__ == "__main__":\n'
        f'    print({name[:30]}_summary("{topic} is {topic}, and more {topic}"))\n'
        "```"
    )


def _paragraphs(topic: str, n_words: int, sampler: Sampler, headings: bool) -> str:
    other = sampler.pick(["its alternatives", "the status quo", "a simpler approach", "older methods"])
    out, total, section = [], 0, 0
    while total < n_words:
        if headings and total and section < len(_HEADINGS) and len(out) % 3 == 0:
            out.append(f"## {_HEADINGS[section]}")
            section += 1
        paragraph = []
        for _ in range(4):
            sentence = sampler.pick(_FILLER).format(topic=topic, Topic=topic[:1].upper() + topic[1:], other=other)
            paragraph.append(sentence)
            total += len(words(sentence))
            if total >= n_words:
                break
        out.append(" ".join(paragraph))
    return "\n\n".join(out)


def _describe_media(media: list[Media]) -> str:
    lines = []
    counters: dict[str, int] = {}
    for item in media:
        counters[item.kind] = counters.get(item.kind, 0) + 1
        label = {"image": "Image", "audio": "Audio", "video": "Video", "pdf": "PDF"}[item.kind]
        lines.append(f"- **{label} {counters[item.kind]}**: {item.summary}")
        if item.text:
            lines.append("")
            lines.append("  Extracted text:")
            lines.append("")
            lines.extend(f"  > {line}" if line else "  >" for line in item.text.strip().splitlines())
    return "\n".join(lines)


def _intent(text: str) -> str:
    low = text.lower()
    if re.search(r"\b(who|what) are you\b|\bwhat model\b|^\s*(hi|hello|hey)\b", low):
        return "identity"
    if find_expression(text) and re.search(
        r"\b(what|calculate|compute|evaluate|solve|how much)\b|=\s*\?|^\s*[-\d(]", low
    ):
        return "arithmetic"
    if re.search(r"\b(code|python|javascript|sql|bash|script|function|program)\b", low) and re.search(
        r"\b(write|show|give|code|generate|example)\b", low
    ):
        return "code"
    if re.search(r"\bhow many (words|characters|letters|chars|items|sentences|lines)\b|\bcount\b", low):
        return "count"
    if re.search(r"\b(summari[sz]e|summary|tl;?dr)\b", low):
        return "summary"
    if re.search(r"\b(quote|repeat|echo)\b", low):
        return "quote"
    if re.search(r"\b(\d+|a|one)\s+words?\b", low) and re.search(r"\bwrite|generate|essay|give\b", low):
        return "long"
    if re.search(r"\blong (answer|essay|text|story)\b|\bin detail\b", low):
        return "long"
    if re.search(r"\btable\b", low):
        return "table"
    if _list_request(text):
        return "list"
    return "default"


def _answer_body(request: Request, text: str, sampler: Sampler, intent: str) -> str:
    history = request.messages
    low = text.lower()
    topic = " ".join(keywords(text, 2)) or "this topic"
    if intent == "identity":
        model = request.model
        return (
            f"I am **{model}**, the local demo model built into this playground. I am not a real language "
            "model: I answer with simple deterministic rules (arithmetic, counting, quoting, summaries, lists, "
            "tables, code samples, long texts), so you can try every feature of the API offline.\n\n"
            "Try for example:\n\n- `what is 12*7+3`\n- `list 5 fruits`\n- `write a table of planets`\n"
            "- `write python code`\n- `write 300 words about rivers`"
        )
    if intent == "arithmetic":
        expression = find_expression(text) or ""
        try:
            value = evaluate(expression)
        except (ArithmeticError_, SyntaxError, ValueError, OverflowError) as exc:
            return f"I could not evaluate `{expression}`: {exc}."
        return f"{expression} = **{fmt(value)}**"
    if intent == "count":
        target = target_text(text, history)
        n_words, n_chars = len(words(target)), len(target)
        items = [i for i in re.split(r"\n|,|;", target) if i.strip()]
        if re.search(r"\b(characters|letters|chars)\b", low):
            letters = sum(c.isalpha() for c in target)
            return f"The text has **{n_chars} characters** ({letters} letters, {n_words} words)."
        if re.search(r"\bitems\b", low):
            return f"I count **{len(items)} items**: " + ", ".join(i.strip() for i in items[:50]) + "."
        if re.search(r"\bsentences\b", low):
            return f"The text has **{len(sentences(target))} sentences**."
        if re.search(r"\blines\b", low):
            return f"The text has **{len(target.splitlines())} lines**."
        return f"The text has **{n_words} words** ({n_chars} characters)."
    if intent == "summary":
        target = target_text(text, history)
        parts = sentences(target)
        key = ", ".join(keywords(target, 5)) or "none"
        gist = " ".join(parts[:2]) if parts else target
        return (
            f"**Summary** ({len(words(target))} words in, {len(parts)} sentences):\n\n"
            f"{clip(gist, 300)}\n\n**Key terms:** {key}."
        )
    if intent == "quote":
        target = target_text(text, history)
        return "\n".join(f"> {line}" if line else ">" for line in target.splitlines() or [target])
    if intent == "long":
        match = re.search(r"\b(\d+)\s+words?\b", low)
        n_words = min(int(match.group(1)), 20000) if match else 600
        return f"# {topic.title()}\n\n" + _paragraphs(topic, n_words, sampler, headings=n_words >= 200)
    if intent == "table":
        listed = _list_request(text)
        count, list_topic = listed if listed else (5, topic)
        for stem in _VOCAB:
            if stem in low:
                list_topic = stem
        items = _items_for(list_topic, count, sampler)
        rows = ["| # | Item | Letters | Vowels |", "|---:|---|---:|---:|"]
        for i, item in enumerate(items, 1):
            rows.append(f"| {i} | {item} | {sum(c.isalpha() for c in item)} | {sum(c in 'aeiouAEIOU' for c in item)} |")
        return "\n".join(rows)
    if intent == "code":
        language = next((lang for lang in ("javascript", "sql", "bash") if lang in low), "python")
        if language == "python" and re.search(r"\bjs\b", low):
            language = "javascript"
        return f"Here is a small {language} example about {topic}:\n\n{_code(language, topic)}"
    if intent == "list":
        count, list_topic = _list_request(text)
        items = _items_for(list_topic, count, sampler)
        return "\n".join(f"{i}. {item}" for i, item in enumerate(items, 1))
    # Default: respond to what was said, with a little varied markdown.
    n_user_turns = sum(1 for m in history if m.role == "user")
    said = clip(text, 200)
    lines = []
    if said:
        lines.append(f"You wrote {len(words(text))} words:\n\n> {said}")
    if n_user_turns > 1:
        lines.append(f"This is turn {n_user_turns} of our conversation.")
    kws = keywords(text, 4)
    if kws:
        lines.append("The main terms I notice:\n\n" + "\n".join(f"- **{k}**" for k in kws))
        lines.append(_paragraphs(kws[0], 40, sampler, headings=False))
    return "\n\n".join(lines) or "Ask me something — try `what is 12*7+3` or `list 5 fruits`."


def _reasoning(request: Request, text: str, intent: str, sampler: Sampler) -> str:
    effort = request.reasoning_effort or "high"
    parts = [
        f"The user's last message has {len(words(text))} words: “{clip(text, 120)}”.",
        f"It looks like a {intent} request, so I will answer it directly.",
    ]
    if intent == "arithmetic":
        steps: list[str] = []
        expression = find_expression(text) or ""
        try:
            evaluate(expression, steps)
            parts.append("Working it out step by step: " + "; ".join(steps) + ".")
        except (ArithmeticError_, SyntaxError, ValueError, OverflowError):
            parts.append(f"The expression {expression} cannot be evaluated safely.")
    kws = keywords(text, 3)
    if kws:
        parts.append("The key terms are " + ", ".join(kws) + "; the answer should cover them.")
    media = [m for m in request.messages[-1].media] if request.messages else []
    if media:
        parts.append(f"There are {len(media)} attached inputs; I describe what their bytes actually contain.")
    if request.tools:
        parts.append(f"{len(request.tools)} tools are available: " + ", ".join(t["name"] for t in request.tools) + ".")
    parts.append("I should be honest that I am the local demo model and keep the format readable.")
    rounds = 6 if effort == "max" or re.search(r"step by step|think (hard|carefully)", text.lower()) else 1
    for i in range(rounds):
        parts.append(
            sampler.pick(
                [
                    f"Check {i + 1}: does the answer address what was asked? Yes, it follows the {intent} rule.",
                    f"Check {i + 1}: re-reading the question to make sure nothing is missed.",
                    f"Check {i + 1}: the wording should be short and precise, with markdown where it helps.",
                    f"Check {i + 1}: numbers and names must come from the conversation, not be invented.",
                ]
            )
        )
    return " ".join(parts)


def _tool_result_answer(request: Request) -> str:
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


def generate(request: Request, index: int = 0) -> Answer:
    """The full answer for choice `index` (the caller applies stop sequences and max_tokens)."""
    sampler = Sampler(request, index)
    last = request.messages[-1]
    text = last.text
    intent = _intent(text)

    reasoning = _reasoning(request, text, intent, sampler) if request.thinking else ""
    if reasoning and count_tokens(reasoning) > request.thinking_budget:
        reasoning = "".join(split_tokens(reasoning)[: request.thinking_budget])

    if last.role == "user":
        call = tool_call_for(request, text, sampler)
        if call:
            return Answer(content="", reasoning=reasoning, tool_calls=[call])

    if last.role == "tool":
        body = _tool_result_answer(request)
    else:
        media = [m for m in last.media]
        body = _answer_body(request, text, sampler, intent)
        if media:
            described = _describe_media(media)
            body = described if intent == "default" and len(words(text)) < 12 else f"{described}\n\n{body}"

    if request.json_mode:
        payload = {
            "model": request.model,
            "note": "local demo model: deterministic, rule-based output",
            "intent": intent,
            "answer": body,
            "words": len(words(body)),
        }
        return Answer(content=json.dumps(payload, ensure_ascii=False), reasoning=reasoning)

    # The intro goes through the sampler first; choices after the first rotate it so that n answers differ.
    intro_at = (sampler.rng.randrange(len(_INTROS)) + index) % len(_INTROS)
    if request.temperature == 0:
        intro_at = index % len(_INTROS)
    intro = _INTROS[intro_at].format(model=request.model)
    return Answer(content=f"{intro}\n\n{body}", reasoning=reasoning)


class PromptCache:
    """Remembers message prefixes per key, to report `cached_tokens` for a prefix seen before."""

    def __init__(self, per_owner: int = 512):
        self.per_owner = per_owner
        self.seen: dict[str, dict[str, int]] = {}

    def lookup_and_store(self, owner: str, prefixes: list[tuple[str, int]]) -> int:
        """`prefixes` are (hash of the first k messages, their tokens); returns the longest cached one's tokens."""
        known = self.seen.setdefault(owner, {})
        cached = max((tokens for digest, tokens in prefixes if digest in known), default=0)
        for digest, tokens in prefixes:
            known.pop(digest, None)
            known[digest] = tokens
        while len(known) > self.per_owner:
            known.pop(next(iter(known)))
        return cached
