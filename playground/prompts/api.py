"""GET /api/prompts/<name>?label=production (or ?version=N): the compiled chat request of a prompt version, for
code. Authenticated by the user's own playground API token (`Authorization: Bearer pgp_…`); the variables come as
query parameters or as a JSON body ({"variables": {...}}). Another user's or team's prompt is a 404, like a name
that does not exist."""

import json
from datetime import timedelta

from django.contrib.auth.decorators import login_not_required
from django.http import JsonResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from playground import inputs
from playground.prompts import labels as labeling
from playground.prompts.compiling import CompileError, compile_request
from playground.prompts.models import ApiToken, Prompt

RESERVED = {"label", "version", "team"}
MAX_BODY = 1024 * 1024


def _error(status: int, message: str, field: str = "") -> JsonResponse:
    return JsonResponse({"error": {"message": message, "field": field}}, status=status)


def _token(request) -> ApiToken | None:
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    return ApiToken.user_for(token.strip()) if scheme.lower() == "bearer" else None


def _variables(request) -> dict:
    values = {k: v for k, v in request.GET.items() if k not in RESERVED}
    if request.body:
        if len(request.body) > MAX_BODY:
            raise CompileError(f"body: {len(request.body):,} bytes; the limit is {MAX_BODY:,}.")
        try:
            body = inputs.loads(request.body, field="body")
        except inputs.InputError as exc:
            raise CompileError(f"{exc}.") from None
        except (ValueError, UnicodeDecodeError):
            raise CompileError('body: not valid JSON (send {"variables": {"name": "value"}}).') from None
        body = body.get("variables", body) if isinstance(body, dict) else None
        if not isinstance(body, dict):
            raise CompileError('body: a JSON object of variables ({"variables": {...}}).')
        values.update(body)
    return values


def _prompt(user, name: str, team) -> Prompt | None:
    prompts = Prompt.objects.for_user(user).filter(name=name)
    if team:
        return prompts.filter(team_id=inputs.object_id(team)).first()
    # The user's own prompt of that name first, then a team's.
    return min(prompts, key=lambda p: (p.team_id is not None, p.team_id or 0), default=None)


@csrf_exempt
@login_not_required
@require_http_methods(["GET", "POST"])
def prompt_request(request, name: str):
    token = _token(request)
    if token is None:
        return _error(401, "Authorization: send your playground API token as `Bearer pgp_…` (Prompts → API tokens).")
    if token.last_used is None or timezone.now() - token.last_used > timedelta(minutes=1):
        ApiToken.objects.filter(pk=token.pk).update(last_used=timezone.now())
    if "\x00" in name or any("\x00" in v for v in request.GET.values()):
        return _error(400, "NUL characters (\\u0000) are not allowed.", "query")
    try:
        prompt = _prompt(token.owner, name, request.GET.get("team"))
    except Exception:  # a team that is no id names nothing
        prompt = None
    if prompt is None:
        return _error(404, f"No prompt named “{name[:100]}” in your prompts or your teams'.", "name")
    label, number = request.GET.get("label"), request.GET.get("version")
    if label and number:
        return _error(400, "Ask by label or by version, not both.", "label")
    if label:
        try:
            version = labeling.existing(prompt, label).version
        except labeling.LabelError as exc:
            return _error(404, str(exc), "label")
    elif number:
        if not number.isdigit() or len(number) > 9:
            return _error(400, "version: a whole number (1, 2, …).", "version")
        version = prompt.versions.filter(number=int(number)).first()
        if version is None:
            return _error(404, f"version: {prompt.name} has no v{number}.", "version")
    else:
        version = prompt.latest()
    try:
        body = compile_request(version, _variables(request))
    except CompileError as exc:
        return _error(400, str(exc), "variables")
    return JsonResponse(
        {
            "prompt": prompt.name,
            "version": version.number,
            "ref": f"{prompt.name}@v{version.number}",
            "labels": sorted(version.labels.values_list("name", flat=True)),
            "request": body,
        },
        json_dumps_params={"ensure_ascii": False},
    )


def describe(body: dict) -> str:
    return json.dumps(body, indent=2, ensure_ascii=False)
