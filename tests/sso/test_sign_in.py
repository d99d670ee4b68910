"""Single sign-on against the fake provider: the flow's checks, accounts made or linked, refusals in words."""

from urllib.parse import parse_qs, urlparse

import pytest
from django.contrib.auth import get_user_model

from playground.operators.models import AuditEvent
from playground.sso.backends import signing_key
from playground.sso.models import Identity
from playground.sso.services import SignInRefused
from tests.sso.conftest import authorize, sign_in, signed_in_user

pytestmark = pytest.mark.django_db


def test_the_authorization_request_carries_state_nonce_and_an_s256_pkce_challenge(client, idp):
    location, _ = authorize(client)
    query = {k: v[0] for k, v in parse_qs(urlparse(location).query).items()}
    assert location.startswith(f"{idp.url}/authorize?")
    assert query["client_id"] == "playground-test"
    assert query["redirect_uri"] == "http://testserver/sso/callback/"
    assert query["code_challenge_method"] == "S256"
    assert len(query["state"]) >= 32 and len(query["nonce"]) >= 32 and query["code_challenge"]
    assert set(query["scope"].split()) >= {"openid", "email", "groups"}


def test_one_sign_in_makes_the_account_just_in_time_and_signs_it_in(client, idp):
    response = sign_in(client)
    assert response.status_code == 302 and response["Location"] == "/"
    user = signed_in_user(client)
    assert user.username == "dana" and user.email == "dana@example.com" and not user.has_usable_password()
    assert Identity.objects.get(user=user).subject == "dana-0001"
    # The token request proved the PKCE verifier (the provider checks it against the challenge).
    assert idp.token_requests[-1]["code_verifier"]
    assert AuditEvent.objects.filter(action="sso_created", subject=user).exists()
    assert client.get("/teams/").status_code == 200


def test_the_next_page_is_kept_through_the_provider(client, idp):
    response = sign_in(client, next_url="/teams/")
    assert response["Location"] == "/teams/"


def test_a_second_sign_in_is_the_same_account(client, idp):
    sign_in(client)
    client.logout()
    sign_in(client)
    assert get_user_model().objects.count() == 1


def test_an_existing_account_is_linked_by_a_verified_email(client, idp, alice):
    idp.person.email = "alice@example.com"
    sign_in(client)
    assert signed_in_user(client) == alice
    assert Identity.objects.get(subject="dana-0001").user == alice
    assert AuditEvent.objects.filter(action="sso_linked", subject=alice).exists()


def test_an_unverified_email_is_not_linked_to_an_existing_account(client, idp, alice):
    idp.person.email = "alice@example.com"
    idp.person.email_verified = False
    response = sign_in(client)
    assert response.status_code == 403
    assert "does not say this email is verified" in response.content.decode()
    assert signed_in_user(client) is None
    assert not Identity.objects.exists()


def test_the_required_group_refuses_everyone_outside_it_in_words(client, idp, settings):
    settings.OIDC_REQUIRED_GROUP = "playground-users"
    response = sign_in(client)
    assert response.status_code == 403
    assert "not in the group “playground-users”, which this playground requires" in response.content.decode()
    assert signed_in_user(client) is None
    assert not get_user_model().objects.exists()
    assert AuditEvent.objects.filter(action="sso_refused").exists()

    idp.person.groups = ["playground-users"]
    assert sign_in(client).status_code == 302
    assert signed_in_user(client).username == "dana"


@pytest.mark.parametrize(
    "tamper, words",
    [
        ("issuer", "issued by another provider"),
        ("audience", "issued for another application"),
        ("expired", "ID token has expired"),
        ("signature", "signature does not match"),
        ("nonce", "not issued for this sign-in (its nonce is not the one this browser sent)"),
        ("unknown-kid", "the provider’s key set has no RS256 key named “fake-idp-key-9”"),
        ("no-kid-two-keys", "it does not name its key (no kid) and the provider’s key set has 2 RS256 keys"),
    ],
)
def test_a_bad_id_token_signs_nobody_in_and_says_why(client, idp, tamper, words):
    idp.tamper = tamper
    response = sign_in(client)
    assert response.status_code == 403
    assert words in response.content.decode()
    assert signed_in_user(client) is None
    assert not get_user_model().objects.exists()


def test_an_id_token_without_a_kid_is_accepted_from_a_provider_with_one_key(client, idp):
    idp.tamper = "no-kid"
    response = sign_in(client)
    assert response.status_code == 302, response.content.decode()
    assert signed_in_user(client).email == "dana@example.com"


@pytest.mark.parametrize(
    "keys, header, found",
    [
        ([{"kty": "RSA", "kid": "a"}], {"alg": "RS256"}, "a"),
        ([{"kty": "RSA", "kid": "a"}, {"kty": "EC", "kid": "b"}], {"alg": "ES256"}, "b"),
        (
            [{"kty": "RSA", "kid": "a", "alg": "RS256"}, {"kty": "RSA", "kid": "b", "alg": "RS512"}],
            {"alg": "RS512"},
            "b",
        ),
        ([{"kty": "RSA", "kid": "a"}, {"kty": "RSA", "kid": "b"}], {"alg": "RS256", "kid": "b"}, "b"),
        ([{"kty": "RSA", "kid": "a"}, {"kty": "RSA", "kid": "b", "use": "enc"}], {"alg": "RS256"}, "a"),
        ([{"kty": "RSA", "kid": "a"}, {"kty": "RSA", "kid": "b"}], {"alg": "RS256"}, None),
        ([], {"alg": "RS256"}, None),
        ([{"kty": "RSA", "kid": "a"}], {"alg": "RS256", "kid": "z"}, None),
        ([{"kty": "RSA", "kid": "a", "alg": "RS256"}], {"alg": "ES256"}, None),
    ],
)
def test_the_signing_key_is_the_kids_or_the_one_key_of_the_tokens_algorithm(keys, header, found):
    if found is None:
        with pytest.raises(SignInRefused):
            signing_key(keys, header)
    else:
        assert signing_key(keys, header)["kid"] == found


def test_a_replayed_state_is_refused_before_the_provider_is_asked(client, idp):
    _, callback = authorize(client)
    assert client.get(callback).status_code == 302
    client.logout()
    asked = len(idp.token_requests)
    response = client.get(callback)
    assert response.status_code == 400
    assert "state is unknown" in response.content.decode()
    assert len(idp.token_requests) == asked
    assert signed_in_user(client) is None


def test_a_state_from_another_browser_is_refused(client, idp, django_user_model):
    from django.test import Client

    _, callback = authorize(client)
    stranger = Client()
    response = stranger.get(callback)
    assert response.status_code == 400 and "state is unknown" in response.content.decode()
    assert signed_in_user(stranger) is None


def test_a_refusal_at_the_provider_is_shown_in_words(client, idp):
    idp.person = None
    response = sign_in(client)
    assert response.status_code == 403
    assert "The sign-in provider answered: access_denied" in response.content.decode()


def test_a_deactivated_account_cannot_sign_in(client, idp):
    sign_in(client)
    user = signed_in_user(client)
    client.logout()
    user.is_active = False
    user.save()
    response = sign_in(client)
    assert response.status_code == 403 and "deactivated by an administrator" in response.content.decode()
    assert signed_in_user(client) is None


def test_sign_out_ends_the_session_and_goes_to_the_provider(client, idp):
    sign_in(client)
    response = client.post("/sso/logout/")
    assert response.status_code == 302
    end = urlparse(response["Location"])
    query = parse_qs(end.query)
    assert f"{end.scheme}://{end.netloc}{end.path}" == f"{idp.url}/logout"
    assert query["id_token_hint"][0].count(".") == 2
    assert query["post_logout_redirect_uri"] == ["http://testserver/accounts/login/"]
    assert signed_in_user(client) is None


def test_the_sign_in_page_offers_the_provider(client, idp):
    page = client.get("/accounts/login/?next=/teams/").content.decode()
    assert 'href="/sso/login/?next=/teams/"' in page and "Sign in with Fake IdP" in page


def test_without_an_issuer_there_is_no_button_and_no_flow(client, settings):
    settings.OIDC_ISSUER = ""
    assert "Sign in with" not in client.get("/accounts/login/").content.decode()
    assert client.get("/sso/login/").status_code == 404


def test_password_sign_in_does_not_need_the_provider(client, alice, settings):
    from tests.conftest import PASSWORD

    settings.OIDC_ISSUER = "http://127.0.0.1:9"  # nothing listens there
    settings.OIDC_RP_CLIENT_ID = "playground-test"
    response = client.post("/accounts/login/", {"username": "alice", "password": PASSWORD})
    assert response.status_code == 302
    assert signed_in_user(client) == alice
    # and a signed-in page does not ask the provider either
    assert client.get("/teams/").status_code == 200


def test_a_provider_that_cannot_be_reached_is_said_in_words(client, idp, settings):
    settings.OIDC_ISSUER = "http://127.0.0.1:9"  # nothing listens there
    response = client.get("/sso/login/")
    assert response.status_code == 502
    assert "discovery document (http://127.0.0.1:9/.well-known/openid-configuration) could not be read" in (
        response.content.decode()
    )


def test_a_single_sign_on_session_ends_when_the_account_is_deactivated(client, idp):
    sign_in(client)
    assert client.get("/teams/").status_code == 200
    get_user_model().objects.filter(username="dana").update(is_active=False)
    assert client.get("/teams/").status_code == 302


def test_pages_allow_only_the_providers_origin_besides_their_own_as_a_form_target(client, idp, settings):
    assert f"form-action 'self' {idp.url};" in client.get("/accounts/login/")["Content-Security-Policy"]
    settings.OIDC_ISSUER = ""
    assert "form-action 'self';" in client.get("/accounts/login/")["Content-Security-Policy"]


def test_a_single_sign_on_account_is_offered_no_password_change(client, idp, alice):
    sign_in(client)
    page = client.get("/teams/").content.decode()
    assert "Change password" not in page
    form = client.get("/accounts/password/").content.decode()
    assert "Your account signs in with Fake IdP: it has no password here" in form
    assert 'name="old_password"' not in form

    client.force_login(alice)  # a password account keeps its entry
    assert "Change password" in client.get("/teams/").content.decode()
    assert 'name="old_password"' in client.get("/accounts/password/").content.decode()
