"""Material of the canned replies: vocabularies, filler prose, list items and code samples."""

import re

from playground.localapi.engines.generator.sampler import Sampler
from playground.localapi.engines.generator.text import keywords, words

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

VOCAB = {
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


def list_request(text: str) -> tuple[int, str] | None:
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


def items_for(topic: str, count: int, sampler: Sampler) -> list[str]:
    for stem, vocab in VOCAB.items():
        if stem in topic:
            pool = vocab.split()
            return [pool[i % len(pool)] + ("" if i < len(pool) else f" ({i // len(pool) + 1})") for i in range(count)]
    base = keywords(topic, 2) or ["idea"]
    adjectives = ["practical", "simple", "surprising", "classic", "modern", "cheap", "careful", "bold", "quiet"]
    start = sampler.rng.randrange(len(adjectives))
    return [f"{adjectives[(start + i) % len(adjectives)].capitalize()} {base[0]} #{i + 1}" for i in range(count)]


def code_sample(language: str, topic: str) -> str:
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


def paragraphs(topic: str, n_words: int, sampler: Sampler, headings: bool) -> str:
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
