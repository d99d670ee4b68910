from django.contrib.auth import login as auth_login
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_not_required
from django.contrib.auth.forms import AuthenticationForm, UserCreationForm
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from playground import inputs
from playground.accounts import policy, throttle

_login_view = auth_views.LoginView.as_view(redirect_authenticated_user=True, authentication_form=policy.LoginForm)


def _throttled(request, template: str, form, wait: int):
    """The page again with only the throttle's words (the password is not checked) and a 429."""
    form.errors.clear()
    form.add_error(None, throttle.message(wait))
    response = render(request, template, {"form": form, "next": request.POST.get("next", "")}, status=429)
    response["Retry-After"] = str(wait)
    return response


@login_not_required
@require_http_methods(["GET", "POST"])
def login(request):
    """Django's login, with failures counted per address and per account (throttle.py)."""
    if request.method != "POST":
        return _login_view(request)
    username = request.POST.get("username", "")[:150]
    wait = throttle.wait_seconds(request, "login", username)
    if wait:
        # Bound without the password, so that nothing is authenticated while blocked.
        form = AuthenticationForm(request, data={"username": username})
        return _throttled(request, "registration/login.html", form, wait)
    response = _login_view(request)
    if response.status_code == 302:
        throttle.forget("login", username=username)
    else:
        throttle.count(request, "login", username)
    return response


def _next(request) -> str:
    """The page to go to after signing up (a fork, an invite), kept only when it is a path of this site."""
    return inputs.next_url(request, "")


@login_not_required
@require_http_methods(["GET", "POST"])
def signup(request):
    after = _next(request)
    if request.user.is_authenticated:
        return redirect(after or "chat:index")
    if refusal := policy.signup_refusal(request):
        return render(request, "registration/signup_closed.html", {"words": refusal}, status=403)
    form = UserCreationForm(request.POST or None)
    if request.method == "POST":
        wait = throttle.wait_seconds(request, "signup")
        if wait:
            form = UserCreationForm(data={"username": request.POST.get("username", "")[:150]})
            return _throttled(request, "registration/signup.html", form, wait)
        throttle.count(request, "signup")
        if form.is_valid():
            user = form.save()
            auth_login(request, user, backend="django.contrib.auth.backends.ModelBackend")
            return redirect(after or "chat:index")
    return render(request, "registration/signup.html", {"form": form, "next": after})
