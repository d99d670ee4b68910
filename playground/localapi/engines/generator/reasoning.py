"""The reasoning a thinking model shows before its answer, bounded by thinking_budget."""

import re

from playground.localapi.engines.generator.arithmetic import ArithmeticError_, evaluate, find_expression
from playground.localapi.engines.generator.sampler import Sampler
from playground.localapi.engines.generator.shapes import Request
from playground.localapi.engines.generator.text import clip, keywords, words
from playground.localapi.tokens import count_tokens, split_tokens


def reasoning(request: Request, text: str, intent: str, sampler: Sampler) -> str:
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


def within_budget(reasoning: str, budget: int) -> str:
    if reasoning and count_tokens(reasoning) > budget:
        return "".join(split_tokens(reasoning)[:budget])
    return reasoning
