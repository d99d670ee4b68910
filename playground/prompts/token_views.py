"""The page where a user creates (shown once) and revokes playground API tokens for /api/prompts/."""

from django import forms
from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from playground.prompts.models import ApiToken

MAX_TOKENS = 20


class TokenForm(forms.Form):
    name = forms.CharField(label="Token name", max_length=100, error_messages={"required": "name: name the token."})


def tokens(request):
    form = TokenForm(request.POST or None)
    created = None
    if request.method == "POST":
        if ApiToken.objects.filter(owner=request.user).count() >= MAX_TOKENS:
            form.add_error(None, f"At most {MAX_TOKENS} tokens: revoke one first.")
        elif form.is_valid():
            _, created = ApiToken.mint(request.user, form.cleaned_data["name"].strip())
    context = {"form": form, "created": created, "tokens": ApiToken.objects.filter(owner=request.user)}
    return render(request, "prompts/tokens.html", context, status=400 if form.errors else 200)


@require_POST
def revoke(request, tid: int):
    token = get_object_or_404(ApiToken, owner=request.user, pk=tid)
    token.delete()
    messages.success(request, f"Revoked {token.name}: it no longer works.")
    return redirect("prompts:tokens")
