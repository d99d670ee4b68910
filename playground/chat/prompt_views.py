"""Chat and prompts: a new chat from a prompt version (a form fills its variables; the conversation records
`name@vN`), and a conversation's current setup saved as a prompt or as a prompt's new version."""

from asgiref.sync import sync_to_async
from django import forms
from django.contrib import messages
from django.db import transaction
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods

from playground.chat import commands
from playground.chat.models import Conversation, Message, get_conversation
from playground.connections.models import Connection, Team
from playground.lib.templating import render as fill
from playground.prompts.compiling import CompileError, check_values, version_variables
from playground.prompts.drafts import check_draft, check_name, save_version
from playground.prompts.models import Prompt, PromptVersion


def _version(request, vid) -> PromptVersion:
    rows = PromptVersion.objects.for_user(request.user).select_related("prompt", "connection")
    return get_object_or_404(rows, pk=vid)


def _start(request, version: PromptVersion, values: dict) -> tuple[Conversation, str]:
    """The conversation of the version (system, parameters, tools, few-shot turns) and its first message."""
    usable = Connection.objects.for_user(request.user)
    connection = version.connection if version.connection_id and usable.filter(pk=version.connection_id) else None
    params = dict(version.params)
    if version.tools:
        params["tools"] = version.tools
    with transaction.atomic():
        conversation = Conversation.objects.create(
            owner=request.user,
            title=version.ref[:200],
            system_prompt=fill(version.system, values)[0],
            connection=connection,
            model_id=version.model_id,
            params=params,
            prompt_version=version,
            prompt_ref=version.ref[:200],
        )
        for shot in version.shots:
            text = fill(shot["content"], values)[0]
            Message.objects.create(conversation=conversation, role=shot["role"], content=text)
    return conversation, fill(version.template, values)[0]


@require_http_methods(["GET", "POST"])
async def from_prompt(request, vid: int):
    """GET: the variables' form; POST: the conversation, and its first message sent (when the template has one)."""
    version = await sync_to_async(_version)(request, vid)
    names = version_variables(version)
    errors, values, status = [], {}, 400
    if request.method == "POST":
        # A variable left empty has no value (as evaluate flags an empty one): the form says which.
        posted = {name: request.POST.get(f"var_{name}", "") for name in names}
        values = {name: value for name, value in posted.items() if value.strip()}
        try:
            values = check_values(version, values)
        except CompileError as exc:
            errors = [str(exc)]
        if not errors:
            conversation, first = await sync_to_async(_start)(request, version, values)
            if first.strip():
                outcome = await commands.send(await request.auser(), conversation.pk, {"content": first})
                if not outcome.sent:
                    # Nothing was sent: the conversation made for it goes too, and the form says why.
                    await conversation.adelete()
                    errors = outcome.errors or ["The first message was not sent."]
                    status = outcome.status if outcome.status >= 400 else 200  # as the composer shows a refusal
            if not errors:
                return redirect("chat:conversation", pk=conversation.pk)
    fields = [(name, request.POST.get(f"var_{name}", "")) for name in names]
    context = {"version": version, "fields": fields, "errors": errors}
    return await sync_to_async(render)(request, "chat/from_prompt.html", context, status=status if errors else 200)


class SavePromptForm(forms.Form):
    target = forms.ChoiceField(label="Save as", required=False)
    name = forms.CharField(label="New prompt's name", max_length=100, required=False)
    owner = forms.ChoiceField(label="Library", required=False)
    template = forms.ChoiceField(label="User message to keep as the template", required=False)
    message = forms.CharField(label="What changed (optional)", max_length=300, required=False)

    def __init__(self, *args, prompts, teams, questions, **kwargs):
        super().__init__(*args, **kwargs)
        versions = ((str(p.pk), f"New version of {p.name}") for p in prompts)
        self.fields["target"].choices = [("", "A new prompt"), *versions]
        self.fields["owner"].choices = [("", "My prompts"), *((str(t.pk), f"Team: {t.name}") for t in teams)]
        self.fields["template"].choices = [("", "(none)"), *((str(m.pk), m.content[:80]) for m in questions)]


def _setup(conversation: Conversation, template: str, message: str) -> dict:
    params = {k: v for k, v in conversation.params.items() if k != "tools"}
    return {
        "system": conversation.system_prompt,
        "template": template,
        "model": conversation.model_id,
        "connection": conversation.connection,
        "params": params,
        "tools": conversation.params.get("tools") or [],
        "message": message or f"Saved from the chat “{conversation.display_title}”",
    }


def _save(request, conversation, form, prompts, questions) -> tuple[PromptVersion | None, list[str]]:
    data = form.cleaned_data
    chosen = next((m for m in questions if str(m.pk) == data["template"]), None)
    draft, errors = check_draft(request.user, _setup(conversation, chosen.content if chosen else "", data["message"]))
    prompt = next((p for p in prompts if str(p.pk) == data["target"]), None)
    team = None
    if prompt is None:
        team = Team.objects.for_user(request.user).filter(pk=data["owner"]).first() if data["owner"] else None
        errors = check_name(request.user, team, data["name"]) + errors
    if errors:
        return None, errors
    with transaction.atomic():
        if prompt is None:
            prompt = Prompt.objects.create(owner=request.user, team=team, name=data["name"].strip())
        return save_version(prompt, draft, request.user), []


@require_http_methods(["GET", "POST"])
def save_prompt(request, pk: int):
    conversation = get_conversation(request, pk)
    prompts = [p for p in Prompt.objects.for_user(request.user).select_related("team") if p.role_of(request.user)]
    teams = list(Team.objects.for_user(request.user))
    questions = list(conversation.messages.filter(role="user").order_by("-pk")[:50])
    kwargs = {"prompts": prompts, "teams": teams, "questions": questions}
    initial = {"template": str(questions[0].pk) if questions else ""}
    if conversation.prompt_version_id and any(p.pk == conversation.prompt_version.prompt_id for p in prompts):
        initial["target"] = str(conversation.prompt_version.prompt_id)
    form = SavePromptForm(request.POST or None, initial=initial, **kwargs)
    errors = []
    if request.method == "POST":
        if form.is_valid():
            version, errors = _save(request, conversation, form, prompts, questions)
            if version is not None:
                messages.success(request, f"Saved {version.ref} from this conversation.")
                return redirect("prompts:detail", version.prompt_id)
        else:
            errors = [e for errs in form.errors.values() for e in errs]
    context = {"conversation": conversation, "form": form, "errors": errors}
    return render(request, "chat/save_prompt.html", context, status=400 if errors else 200)
