"""Who may sign up (open, invite-only, single sign-on only) and who may sign in with a password."""

import html

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.utils import timezone

from playground.teams.models import Invite, Team
from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db

NEW = {"username": "erin", "password1": PASSWORD, "password2": PASSWORD}


def made(username="erin") -> bool:
    return get_user_model().objects.filter(username=username).exists()


def invite_path(**fields) -> str:
    team = Team.objects.create(name="Demos")
    invite = Invite.objects.create(team=team, expires=timezone.now() + timezone.timedelta(days=1), **fields)
    return f"/teams/join/{invite.token}/"


def test_open_sign_up_makes_an_account(client):
    assert client.post("/accounts/signup/", NEW).status_code == 302
    assert made()


def test_invite_only_refuses_sign_up_without_an_invite_in_words(client, settings):
    settings.SIGNUP_MODE = "invite"
    for response in (client.get("/accounts/signup/"), client.post("/accounts/signup/", NEW)):
        assert response.status_code == 403
        assert "Sign-up here is by invitation only" in response.content.decode()
    assert not made()


def test_invite_only_signs_up_on_the_way_to_a_team_invite_link(client, settings):
    settings.SIGNUP_MODE = "invite"
    join = invite_path()
    assert client.get(f"/accounts/signup/?next={join}").status_code == 200
    assert client.post("/accounts/signup/", {**NEW, "next": join}).status_code == 302
    assert made()


def test_invite_only_refuses_a_used_up_or_expired_invite(client, settings):
    settings.SIGNUP_MODE = "invite"
    used = invite_path(max_uses=1, uses=1)
    assert client.post("/accounts/signup/", {**NEW, "next": used}).status_code == 403
    assert client.post("/accounts/signup/", {**NEW, "next": "/teams/join/not-a-token/"}).status_code == 403
    assert client.post("/accounts/signup/", {**NEW, "next": "/connections/"}).status_code == 403
    assert not made()


def test_sso_only_refuses_every_password_sign_up_and_hides_the_link(client, settings):
    settings.SIGNUP_MODE = "sso"
    settings.OIDC_ISSUER, settings.OIDC_RP_CLIENT_ID = "http://127.0.0.1:9", "playground-test"
    join = invite_path()
    response = client.post("/accounts/signup/", {**NEW, "next": join})
    assert response.status_code == 403 and "Accounts here come from single sign-on only" in response.content.decode()
    assert not made()
    assert "/accounts/signup/" not in client.get("/accounts/login/").content.decode()


def test_local_sign_in_for_superusers_only_refuses_others_in_words(client, settings, alice):
    settings.LOCAL_LOGIN = "superusers"
    response = client.post("/accounts/login/", {"username": "alice", "password": PASSWORD})
    assert response.status_code == 200
    assert "Password sign-in here is for administrators only" in response.content.decode()
    assert "_auth_user_id" not in client.session
    # A wrong password reads the same: the words tell nobody whether a password was right.
    wrong = client.post("/accounts/login/", {"username": "alice", "password": "nope"}).content.decode()
    assert "Password sign-in here is for administrators only" in wrong


def test_local_sign_in_for_superusers_only_lets_a_superuser_in(client, settings, django_user_model):
    settings.LOCAL_LOGIN = "superusers"
    django_user_model.objects.create_superuser("root", "root@example.com", PASSWORD)
    assert client.post("/accounts/login/", {"username": "root", "password": PASSWORD}).status_code == 302


def test_a_bad_group_mapping_or_half_configured_provider_fails_the_check(settings):
    from django.core.management.base import SystemCheckError

    settings.OIDC_GROUP_TEAMS = "ml-demo=Demos:owner"
    with pytest.raises(SystemCheckError, match="must be member or admin"):
        call_command("check")
    settings.OIDC_GROUP_TEAMS = ""
    settings.OIDC_ISSUER, settings.OIDC_RP_CLIENT_SECRET = "https://idp.example.com", ""
    with pytest.raises(SystemCheckError, match="PLAYGROUND_OIDC_CLIENT_SECRET"):
        call_command("check")


def test_the_sign_up_form_keeps_the_invite_link_it_came_from(client, settings):
    settings.SIGNUP_MODE = "invite"
    join = invite_path()
    page = client.get(f"/accounts/signup/?next={join}").content.decode()
    assert f'name="next" value="{join}"' in page


def test_superusers_only_holds_for_the_django_admin_sign_in_too(client, settings, django_user_model):
    settings.LOCAL_LOGIN = "superusers"
    django_user_model.objects.create_user("staff", "staff@example.com", PASSWORD, is_staff=True)
    client.post("/admin/login/", {"username": "staff", "password": PASSWORD})
    assert "_auth_user_id" not in client.session


def test_sessions_signed_in_under_djangos_own_backend_path_stay_valid(client, alice):
    client.force_login(alice, backend="django.contrib.auth.backends.ModelBackend")
    assert client.get("/teams/").status_code == 200


def test_a_deactivated_account_is_told_so_after_the_right_password_only(client, alice):
    alice.is_active = False
    alice.save()
    right = client.post("/accounts/login/", {"username": "alice", "password": PASSWORD}).content.decode()
    assert "This account was deactivated by an administrator" in html.unescape(right)
    assert "Please enter a correct username and password" not in right
    assert "_auth_user_id" not in client.session
    wrong = client.post("/accounts/login/", {"username": "alice", "password": "nope"}).content.decode()
    assert "Please enter a correct username and password" in wrong and "deactivated" not in wrong
    assert "_auth_user_id" not in client.session


def test_a_deactivated_superuser_is_told_so_and_others_keep_the_administrators_only_words(
    client, settings, alice, django_user_model
):
    settings.LOCAL_LOGIN = "superusers"
    django_user_model.objects.create_superuser("root", "root@example.com", PASSWORD, is_active=False)
    alice.is_active = False
    alice.save()
    root = client.post("/accounts/login/", {"username": "root", "password": PASSWORD}).content.decode()
    assert "This account was deactivated by an administrator" in html.unescape(root)
    others = client.post("/accounts/login/", {"username": "alice", "password": PASSWORD}).content.decode()
    assert "Password sign-in here is for administrators only" in others and "deactivated" not in others
    assert "_auth_user_id" not in client.session
