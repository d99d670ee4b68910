"""The prompt pages: the library, a prompt with its version history and labels, the editor (every save is a new
version), one version, two versions compared, restore, export and import."""

import json

from django.contrib import messages
from django.db import transaction
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST, require_safe

from playground import inputs
from playground.connections.models import Team
from playground.prompts import diffing, forms, transfer
from playground.prompts import labels as labeling
from playground.prompts.compiling import compile_request, version_variables
from playground.prompts.drafts import check_draft, check_name, draft_of, save_version
from playground.prompts.models import LabelMove, Prompt, get_prompt, get_version

LISTED = 200


def _editable(request, pk) -> tuple[Prompt, str]:
    prompt = get_prompt(request, pk)
    role = prompt.role_of(request.user)
    if not role:
        raise Http404("No such prompt.")
    return prompt, role


@require_GET
def index(request):
    prompts = Prompt.objects.for_user(request.user).select_related("team").prefetch_related("labels")[:LISTED]
    teams = Team.objects.for_user(request.user)
    return render(request, "prompts/index.html", {"prompts": prompts, "teams": teams})


def _team_of(request, value) -> Team | None:
    if not value:
        return None
    return get_object_or_404(Team.objects.for_user(request.user), pk=inputs.object_id(value))


def _draft_data(request, form, pick) -> dict:
    return {
        "system": form.cleaned_data["system"],
        "template": form.cleaned_data["template"],
        "shots": forms.shots_from(request.POST),
        "model": request.POST.get("model", ""),
        "connection": pick.cleaned_data.get("connection"),
        "tools": form.cleaned_data["tools"],
        "message": form.cleaned_data["message"],
    }


def _editor(request, prompt: Prompt | None, base=None):
    """GET: the editor filled from `base` (a version); POST: check everything, then save a new version."""
    teams = list(Team.objects.for_user(request.user)) if prompt is None else []
    if request.method == "POST":
        form = forms.VersionForm(request.POST, teams=teams)
        pick = forms.picker(request.user, request.POST)
        pick.is_valid()
        errors = [] if form.is_valid() else [e for errs in form.errors.values() for e in errs]
        if not errors:
            team = _team_of(request, form.cleaned_data["owner"]) if prompt is None else prompt.team
            name = form.cleaned_data["name"].strip()
            errors = check_name(request.user, team, name) if prompt is None else []
            draft, problems = check_draft(request.user, _draft_data(request, form, pick), posted=request.POST)
            errors += problems
            if not errors:
                with transaction.atomic():
                    if prompt is None:
                        prompt = Prompt.objects.create(owner=request.user, team=team, name=name)
                    version = save_version(prompt, draft, request.user)
                messages.success(request, f"Saved {version.ref}.")
                return redirect("prompts:detail", prompt.pk)
        params = forms.params_for_page(pick.chosen_model, data=request.POST)
        shots = forms.shots_from(request.POST)
        status = 400
    else:
        initial = {}
        if base is not None:
            initial = {"system": base.system, "template": base.template, "tools": _tools_text(base.tools)}
        form = forms.VersionForm(initial=initial, teams=teams)
        wanted = {"connection": base.connection_id, "model": base.model_id} if base else {}
        pick = forms.picker(request.user, initial=wanted)
        params = forms.params_for_page(pick.chosen_model, stored=base.params if base else {})
        shots, errors, status = (base.shots if base else []), [], 200
    context = {
        "prompt": prompt,
        "base": base,
        "form": form,
        "pick": pick,
        "params": params,
        "shots": forms.shot_rows(shots),
        "errors": errors,
    }
    return render(request, "prompts/edit.html", context, status=status)


def _tools_text(tools) -> str:
    return json.dumps(tools, indent=2) if tools else ""


def _pretty(body: dict) -> str:
    return json.dumps(body, indent=2, ensure_ascii=False)


def new(request):
    if request.method not in ("GET", "POST"):
        return HttpResponse(status=405)
    return _editor(request, None)


def edit(request, pk: int):
    if request.method not in ("GET", "POST"):
        return HttpResponse(status=405)
    prompt, _ = _editable(request, pk)
    base = prompt.latest()
    if request.method == "GET" and request.GET.get("from"):
        base = get_version(prompt, request.GET["from"])
    return _editor(request, prompt, base)


@require_GET
def fields(request):
    """The model picker and the parameter fields of the chosen model (the editor's picker re-renders them)."""
    pick = forms.picker(
        request.user, initial={"connection": request.GET.get("connection"), "model": request.GET.get("model")}
    )
    params = forms.params_for_page(pick.chosen_model, stored={})
    return render(request, "prompts/edit.html#model-fields", {"pick": pick, "params": params})


@require_GET
def detail(request, pk: int):
    prompt = get_prompt(request, pk)
    versions = list(prompt.versions.select_related("author")[:LISTED])
    shown = labeling.by_version(prompt)
    for version in versions:
        version.shown_labels = shown.get(version.number, [])
    latest = versions[0] if versions else None
    context = {
        "prompt": prompt,
        "role": prompt.role_of(request.user),
        "versions": versions,
        "latest": latest,
        "labels": prompt.labels.select_related("version", "moved_by"),
        "moves": _moves(prompt),
        "suggested": labeling.SUGGESTED,
        "variables": version_variables(latest) if latest else [],
        "compiled": _pretty(compile_request(latest, strict=False)) if latest else "",
    }
    return render(request, "prompts/detail.html", context)


def _moves(prompt):
    return LabelMove.objects.filter(label__prompt=prompt).select_related("label", "actor")[:20]


@require_GET
def version(request, pk: int, number: int):
    prompt = get_prompt(request, pk)
    shown = get_version(prompt, number)
    previous = prompt.versions.filter(number__lt=shown.number).order_by("-number").first()
    context = {
        "prompt": prompt,
        "version": shown,
        "previous": previous,
        "sections": diffing.sections(previous, shown) if previous else None,
        "variables": version_variables(shown),
        "compiled": _pretty(compile_request(shown, strict=False)),
        "role": prompt.role_of(request.user),
    }
    return render(request, "prompts/version.html", context)


@require_GET
def compare(request, pk: int):
    prompt = get_prompt(request, pk)
    latest = prompt.latest()
    if latest is None:
        raise Http404("This prompt has no versions.")
    a = get_version(prompt, request.GET.get("a") or max(1, latest.number - 1))
    b = get_version(prompt, request.GET.get("b") or latest.number)
    context = {
        "prompt": prompt,
        "a": a,
        "b": b,
        "numbers": list(prompt.versions.values_list("number", flat=True)),
        "sections": diffing.sections(a, b),
    }
    return render(request, "prompts/compare.html", context)


@require_POST
def restore(request, pk: int, number: int):
    prompt, _ = _editable(request, pk)
    old = get_version(prompt, number)
    version = save_version(
        prompt, draft_of(old, message=f"Restored v{old.number}"), request.user, restored_from=old.number
    )
    messages.success(request, f"v{old.number} restored as {version.ref}.")
    return redirect("prompts:detail", prompt.pk)


@require_POST
def label(request, pk: int):
    prompt, role = _editable(request, pk)
    target = get_version(prompt, request.POST.get("version"))
    try:
        moved = labeling.move(prompt, request.POST.get("label"), target, request.user, role)
    except labeling.LabelError as exc:
        messages.error(request, f"{exc} Nothing was moved.")
    else:
        messages.success(request, f"“{moved.name}” now points at v{target.number}.")
    return redirect("prompts:detail", prompt.pk)


@require_POST
def protect(request, pk: int):
    prompt, role = _editable(request, pk)
    try:
        done = labeling.protect(
            prompt, request.POST.get("label"), request.POST.get("protected") == "on", request.user, role
        )
    except labeling.LabelError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"“{done.name}” is {'protected' if done.protected else 'not protected'}.")
    return redirect("prompts:detail", prompt.pk)


@require_POST
def delete(request, pk: int):
    prompt, role = _editable(request, pk)
    if role != "admin":
        messages.error(request, "Only the team's owner or admins delete a team's prompt.")
        return redirect("prompts:detail", prompt.pk)
    name = prompt.name
    prompt.delete()
    messages.success(request, f"Deleted {name} and all its versions.")
    return redirect("prompts:index")


@require_safe
def export(request, pk: int):
    prompt = get_prompt(request, pk)
    response = HttpResponse(transfer.dumps(prompt), content_type="application/json; charset=utf-8")
    safe = "".join(c if c.isalnum() or c in "-_" else "-" for c in prompt.name)[:60] or "prompt"
    response["Content-Disposition"] = f'attachment; filename="prompt-{safe}.json"'
    return response


@require_POST
def import_view(request):
    upload = request.FILES.get("file")
    team = _team_of(request, request.POST.get("owner"))
    try:
        if upload is None:
            raise transfer.ImportError_(["file: choose an exported prompt (.json)."])
        data = transfer.parse(upload.read(transfer.MAX_IMPORT_BYTES + 1))
        prompt = transfer.import_prompt(request.user, data, team, name=request.POST.get("name") or None)
    except transfer.ImportError_ as exc:
        messages.error(request, "Nothing was imported: " + " ".join(exc.errors))
        return redirect("prompts:index")
    messages.success(request, f"Imported {prompt.name} with {prompt.versions.count()} versions.")
    return redirect("prompts:detail", prompt.pk)
