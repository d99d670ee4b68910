"""The deterministic local "model": scripted answers for tests, rule-based answers otherwise.

Pure Python, no Django. A request may carry a script (script.py: directives such as `[say:…]` in the last
user message, or the `X-Local-Script` header) stating exactly what the model answers. Without one, the model
is honest about what it is (a local demo model) and reads the last user message for a few intents
(canned.py): arithmetic, counting, quoting, summarising, lists, tables, code, long answers, function calls
(tools.py), media descriptions (vision.py), a grader's verdict on a judge prompt (judge.py), with reasoning for
thinking models (reasoning.py). The same
request (including seed) always gives the same answer; the seed, the sampling parameters and the choice index
vary the wording.
"""

import json

from playground.localapi.engines.generator import canned, judge, reasoning, tools, vision
from playground.localapi.engines.generator.cache import PromptCache
from playground.localapi.engines.generator.sampler import Sampler
from playground.localapi.engines.generator.script import Script, ScriptError
from playground.localapi.engines.generator.shapes import Answer, Media, Message, Request
from playground.localapi.engines.generator.text import words

__all__ = ["Answer", "Media", "Message", "PromptCache", "Request", "Script", "ScriptError", "generate"]


def generate(request: Request, index: int = 0) -> Answer:
    """The full answer for choice `index` (the caller applies stop sequences and max_tokens)."""
    script = request.script
    if script.say or script.think or script.calls:
        return _scripted(request, index)
    if judge.is_judge_prompt(request):
        return Answer(content=judge.verdict(request), chunks=script.chunks)
    answer = _canned(request, index)
    answer.chunks = script.chunks
    return answer


def _scripted(request: Request, index: int) -> Answer:
    """The script's parts where it gives them, the canned rules' for the rest."""
    script = request.script
    answer_stated = bool(script.say or script.calls)
    canned_answer = None
    if not answer_stated or (request.thinking and not script.think):
        canned_answer = _canned(request, index)
    if answer_stated:
        content, calls = script.pick(script.say, index) or "", tools.scripted_calls(script.calls, index)
    else:  # only the reasoning is stated
        content, calls = canned_answer.content, canned_answer.tool_calls
    thought = ""
    if request.thinking:
        thought = script.pick(script.think, index) or canned_answer.reasoning
    return Answer(
        content=content,
        reasoning=reasoning.within_budget(thought, request.thinking_budget),
        tool_calls=calls,
        chunks=script.chunks,
    )


def _canned(request: Request, index: int) -> Answer:
    sampler = Sampler(request, index)
    last = request.messages[-1]
    text = last.text
    intent = canned.intent(text)

    thought = reasoning.reasoning(request, text, intent, sampler) if request.thinking else ""
    thought = reasoning.within_budget(thought, request.thinking_budget)

    if last.role == "user":
        call = tools.tool_call_for(request, text, sampler)
        if call:
            return Answer(content="", reasoning=thought, tool_calls=[call])

    if last.role == "tool":
        body = tools.tool_result_answer(request)
    else:
        media = [m for m in last.media]
        body = canned.answer_body(request, text, sampler, intent)
        if media:
            described = vision.describe_media(media)
            body = described if intent == "default" and len(words(text)) < 12 else f"{described}\n\n{body}"

    if request.json_mode:
        payload = {
            "model": request.model,
            "note": "local demo model: deterministic, rule-based output",
            "intent": intent,
            "answer": body,
            "words": len(words(body)),
        }
        return Answer(content=json.dumps(payload, ensure_ascii=False), reasoning=thought)

    return Answer(content=f"{canned.intro(request, sampler, index)}\n\n{body}", reasoning=thought)
