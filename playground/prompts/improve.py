"""Improve this prompt: a judge model the user picks proposes a new draft of the latest version from an instruction
("shorter", "answer in JSON"). The request goes through the gate like any other (checked, a slot, its usage
charged to a team connection). The draft is shown as a diff to accept (a new version) or discard: never an
in-place change."""

import json
from types import SimpleNamespace

from asgiref.sync import sync_to_async
from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from playground.connections import gate
from playground.prompts import diffing, forms
from playground.prompts.drafts import check_text, draft_of, save_version
from playground.prompts.models import get_prompt
from playground.upstream import client
from playground.upstream.errors import UpstreamError

MAX_INSTRUCTION = 2000
ASK = (
    "You improve prompts for a language model. Rewrite the prompt below as the instruction says. Keep every "
    "{{variable}} the user template has. Answer with a JSON object only: "
    '{"system": "<the new system prompt>", "template": "<the new user template>"}.'
)


def judge_body(model_id: str, version, instruction: str) -> dict:
    current = json.dumps({"system": version.system, "template": version.template}, ensure_ascii=False)
    return {
        "model": model_id,
        "messages": [
            {"role": "system", "content": ASK},
            {"role": "user", "content": f"Instruction: {instruction}\n\nThe prompt:\n{current}"},
        ],
        "temperature": 0,
    }


def read_draft(reply: str, version) -> dict:
    """The judge's system and template: its JSON object (also inside a ```json fence), else its whole reply as the
    template (the system prompt kept)."""
    text = reply.strip()
    if text.startswith("```"):
        text = text.strip("`").removeprefix("json").strip()
    try:
        data = json.loads(text[text.find("{") : text.rfind("}") + 1]) if "{" in text else None
    except ValueError:
        data = None
    if isinstance(data, dict) and isinstance(data.get("template"), str):
        system = data.get("system") if isinstance(data.get("system"), str) else version.system
        return {"system": system, "template": data["template"]}
    return {"system": version.system, "template": reply}


def _editable(request, pk):
    prompt = get_prompt(request, pk)
    if not prompt.role_of(request.user):
        raise Http404("No such prompt.")
    # Its connection read here: the async view must not query while it builds the draft.
    return prompt, prompt.versions.select_related("connection").order_by("-number").first()


def _page(request, prompt, base, pick, **extra):
    context = {"prompt": prompt, "base": base, "pick": pick, "instruction": "", "errors": [], **extra}
    return render(request, "prompts/improve.html", context, status=400 if context["errors"] else 200)


@require_http_methods(["GET", "POST"])
async def improve(request, pk: int):
    user = await request.auser()
    prompt, base = await sync_to_async(_editable)(request, pk)
    if base is None:
        return redirect("prompts:edit", pk)
    data = request.POST if request.method == "POST" else None
    wanted = {"connection": base.connection_id, "model": base.model_id}
    pick = await sync_to_async(forms.picker)(user, data, initial=wanted)
    if request.method == "GET":
        return await sync_to_async(_page)(request, prompt, base, pick)
    instruction = request.POST.get("instruction", "").strip()
    errors = []
    if not instruction or len(instruction) > MAX_INSTRUCTION:
        errors.append(f"instruction: say what to change, at most {MAX_INSTRUCTION:,} characters.")
    valid = await sync_to_async(pick.is_valid)()
    if not valid or pick.chosen_model is None:
        errors.append("model: choose the judge model.")
    if errors:
        return await sync_to_async(_page)(request, prompt, base, pick, instruction=instruction, errors=errors)
    body = judge_body(pick.chosen_model.model_id, base, instruction)
    try:
        async with gate.opened(pick.cleaned_data["connection"], user, "chat", body=body, wait=True) as ticket:
            result = await client.chat(ticket.endpoint, body)
            usage = result.data.get("usage") if isinstance(result.data.get("usage"), dict) else {}
            await ticket.asettle(usage=usage, model=body["model"])
    except UpstreamError as exc:
        errors = [f"The judge model failed: {exc.title}: {exc.message}"]
        return await sync_to_async(_page)(request, prompt, base, pick, instruction=instruction, errors=errors)
    choices = result.data.get("choices") or [{}]
    reply = str(((choices[0] or {}).get("message") or {}).get("content") or "")
    draft = read_draft(reply, base)
    proposed = SimpleNamespace(**{**vars(draft_of(base)), **draft})
    proposed.model_id = base.model_id
    sections = diffing.sections(base, proposed)
    context = {"draft": draft, "sections": sections, "instruction": instruction, "judge": body["model"]}
    return await sync_to_async(_page)(request, prompt, base, pick, **context)


@require_POST
def accept(request, pk: int):
    """The draft shown, saved as the next version (the latest's model, parameters and tools; its texts checked)."""
    prompt, base = _editable(request, pk)
    if base is None:
        return redirect("prompts:detail", pk)
    draft = draft_of(base, message=f"Improved: {request.POST.get('instruction', '')}"[:300])
    errors = []
    for name in ("system", "template"):
        text, problems = check_text(request.POST.get(name, ""), name)
        setattr(draft, name, text)
        errors += problems
    if not draft.template.strip() and not draft.system.strip():
        errors.append("template: the draft is empty.")
    if errors:
        messages.error(request, "Nothing was saved: " + " ".join(errors))
        return redirect("prompts:improve", pk)
    version = save_version(prompt, draft, request.user)
    messages.success(request, f"Saved the improved draft as {version.ref}.")
    return redirect("prompts:detail", prompt.pk)
