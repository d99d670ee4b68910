"""A batch made from a prompt version and a set of variable rows: each row compiled into the version's chat request
(as the prompt API compiles it), sent as one batch; the batch's metadata records `prompt: name@vN`."""

from asgiref.sync import sync_to_async
from django import forms
from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods

from playground.batches import services
from playground.batches.forms import MAX_PROMPTS, WINDOW_MAX_HOURS, WINDOW_MIN_HOURS, WINDOW_RE
from playground.batches.variables import MAX_ERRORS, build_requests, parse_rows
from playground.catalog.forms import ModelPickerForm
from playground.prompts.compiling import CompileError, version_variables
from playground.prompts.models import PromptVersion
from playground.upstream.errors import UpstreamError

MAX_ROWS_TEXT = 5 * 1024 * 1024


class PromptBatchForm(ModelPickerForm):
    model_kind = "chat"
    rows = forms.CharField(
        label="Variable rows",
        max_length=MAX_ROWS_TEXT,
        widget=forms.Textarea(attrs={"rows": 6, "spellcheck": "false"}),
        help_text=f'One JSON object per line ({{"topic": "rivers"}}), or CSV with a header row; at most {MAX_PROMPTS}.',
        error_messages={"required": "rows: give at least one row of variables."},
    )
    completion_window = forms.CharField(label="Completion window", initial="24h", max_length=8)

    def clean_completion_window(self):
        window = self.cleaned_data["completion_window"].strip().lower()
        match = WINDOW_RE.match(window)
        if not match or not WINDOW_MIN_HOURS <= int(match.group(1)) <= WINDOW_MAX_HOURS:
            raise forms.ValidationError(f"completion_window: {WINDOW_MIN_HOURS}h to {WINDOW_MAX_HOURS}h, like 24h.")
        return window


def build(version: PromptVersion, model_id: str, text: str) -> bytes:
    """The batch's input file: one request per row of variables (the Batches page's parser and compiler)."""
    rows, errors = parse_rows(text)
    bodies, problems = build_requests(version, rows, model_id) if not errors else ([], [])
    if errors or problems:
        raise CompileError(" ".join((errors or problems)[:MAX_ERRORS]))
    return services.build_lines(bodies)


def _version(request, vid) -> PromptVersion:
    rows = PromptVersion.objects.for_user(request.user).select_related("prompt", "connection")
    return get_object_or_404(rows, pk=vid)


@require_http_methods(["GET", "POST"])
async def from_prompt(request, vid: int):
    user = await request.auser()
    version = await sync_to_async(_version)(request, vid)
    initial = {"connection": version.connection_id, "model": version.model_id}
    data = request.POST if request.method == "POST" else None
    form = await sync_to_async(PromptBatchForm)(data, user=user, initial=initial)
    errors = []
    if data is not None and await sync_to_async(form.is_valid)():
        try:
            content = build(version, form.cleaned_data["model"], form.cleaned_data["rows"])
            batch = await services.submit(
                user=user,
                connection=form.cleaned_data["connection"],
                filename=f"{version.prompt.name}-v{version.number}.jsonl"[:200],
                content=content,
                completion_window=form.cleaned_data["completion_window"],
                metadata={"prompt": version.ref[:512]},
                prompt_version=version,
            )
        except CompileError as exc:
            errors.append(str(exc))
        except UpstreamError as exc:
            shown = services.explain(exc)
            errors.append(f"{shown.get('title', exc.title)}: {exc.message}")
        else:
            await sync_to_async(messages.success)(request, f"Batch {batch.remote_id} made from {version.ref}.")
            return redirect("batches:index")
    elif data is not None:
        errors += [e for errs in form.errors.values() for e in errs]
    context = {"version": version, "form": form, "errors": errors, "variables": version_variables(version)}
    return await sync_to_async(render)(request, "batches/from_prompt.html", context, status=400 if errors else 200)
