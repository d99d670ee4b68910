"""The canned replies: rules that answer what the last message asks (arithmetic, counting, quoting, summaries,
lists, tables, code, long texts), each introduced as the local demo model."""

import re

from playground.localapi.engines.generator.arithmetic import ArithmeticError_, evaluate, find_expression, fmt
from playground.localapi.engines.generator.prose import VOCAB, code_sample, items_for, list_request, paragraphs
from playground.localapi.engines.generator.sampler import Sampler
from playground.localapi.engines.generator.shapes import Request
from playground.localapi.engines.generator.text import clip, keywords, sentences, target_text, words

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


def intent(text: str) -> str:
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
    if list_request(text):
        return "list"
    return "default"


def answer_body(request: Request, text: str, sampler: Sampler, intent: str) -> str:
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
        return f"# {topic.title()}\n\n" + paragraphs(topic, n_words, sampler, headings=n_words >= 200)
    if intent == "table":
        listed = list_request(text)
        count, list_topic = listed if listed else (5, topic)
        for stem in VOCAB:
            if stem in low:
                list_topic = stem
        items = items_for(list_topic, count, sampler)
        rows = ["| # | Item | Letters | Vowels |", "|---:|---|---:|---:|"]
        for i, item in enumerate(items, 1):
            rows.append(f"| {i} | {item} | {sum(c.isalpha() for c in item)} | {sum(c in 'aeiouAEIOU' for c in item)} |")
        return "\n".join(rows)
    if intent == "code":
        language = next((lang for lang in ("javascript", "sql", "bash") if lang in low), "python")
        if language == "python" and re.search(r"\bjs\b", low):
            language = "javascript"
        return f"Here is a small {language} example about {topic}:\n\n{code_sample(language, topic)}"
    if intent == "list":
        count, list_topic = list_request(text)
        items = items_for(list_topic, count, sampler)
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
        lines.append(paragraphs(kws[0], 40, sampler, headings=False))
    return "\n\n".join(lines) or "Ask me something — try `what is 12*7+3` or `list 5 fruits`."


def intro(request: Request, sampler: Sampler, index: int) -> str:
    # The intro goes through the sampler first; choices after the first rotate it so that n answers differ.
    intro_at = (sampler.rng.randrange(len(_INTROS)) + index) % len(_INTROS)
    if request.temperature == 0:
        intro_at = index % len(_INTROS)
    return _INTROS[intro_at].format(model=request.model)
