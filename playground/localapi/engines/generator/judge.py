"""Judge prompts: a grader model asked to judge an answer against a rubric answers with a verdict it can be held to.

A request is a judge prompt when its last user message starts with `Rubric:` and the answer to judge is written
between `<answer>` and `</answer>` in one of its user messages. The verdict is one JSON object
`{"pass": bool, "score": 1-5, "reason": str}`: every phrase the rubric quotes ("…", '…' or “…”) must appear in the
answer (case-insensitive). All found: pass and 5; otherwise a fail scored 1 + 4 × the share found (rounded).
A rubric that quotes nothing passes any non-empty answer. The same prompt always gets the same verdict.
"""

import json
import re

from playground.localapi.engines.generator.shapes import Request

ANSWER = re.compile(r"<answer>\n?(.*?)\n?</answer>", re.S)
QUOTED = re.compile(r"\"([^\"\n]+)\"|“([^”\n]+)”|(?<![A-Za-z])'([^'\n]+)'(?![A-Za-z])")


def is_judge_prompt(request: Request) -> bool:
    users = [m for m in request.messages if m.role == "user"]
    return bool(users) and users[-1].text.lstrip().startswith("Rubric:") and _answer(request) is not None


def _answer(request: Request) -> str | None:
    for message in reversed(request.messages):
        if message.role == "user":
            found = ANSWER.search(message.text)
            if found:
                return found.group(1)
    return None


def verdict(request: Request) -> str:
    """The JSON verdict of a judge prompt (see the module's docstring)."""
    rubric = request.messages[-1].text.lstrip()[len("Rubric:") :]
    answer = _answer(request) or ""
    phrases = [next(group for group in match.groups() if group) for match in QUOTED.finditer(rubric)]
    if not phrases:
        ok = bool(answer.strip())
        reason = "The rubric quotes no phrase and the answer is not empty." if ok else "The answer is empty."
        return json.dumps({"pass": ok, "score": 5 if ok else 1, "reason": reason}, ensure_ascii=False)
    low = answer.casefold()
    found = [p for p in phrases if p.casefold() in low]
    missing = [p for p in phrases if p.casefold() not in low]
    score = 5 if not missing else 1 + round(4 * len(found) / len(phrases))
    score = min(score, 4) if missing else score
    if missing:
        reason = "The answer does not mention " + ", ".join(f"“{p}”" for p in missing) + "."
    else:
        reason = "The answer mentions " + ", ".join(f"“{p}”" for p in found) + "."
    return json.dumps({"pass": not missing, "score": score, "reason": reason}, ensure_ascii=False)
