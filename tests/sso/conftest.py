"""The fake identity provider (tests/fakeidp) on a free port, and the playground configured to use it."""

from urllib.parse import urlparse

import httpx
import pytest

from playground.devserver import free_port
from playground.sso import discovery
from tests.fakeidp import server as fakeidp
from tests.fakeidp.server import CLIENT_ID, CLIENT_SECRET, Person

MAPPING = "ml-demo=Demos:member; ml-leads=Demos:admin; ml-ops=Operations"


@pytest.fixture(scope="session")
def idp_server():
    idp = fakeidp.start(free_port())
    yield idp
    fakeidp.stop(idp)


@pytest.fixture
def idp(idp_server, settings):
    """The provider, signing in dana (in ml-demo) until a test says otherwise; the playground pointed at it."""
    idp_server.person = Person(sub="dana-0001", email="dana@example.com", groups=["ml-demo"])
    idp_server.tamper = ""
    idp_server.token_requests.clear()
    settings.OIDC_ISSUER = idp_server.issuer
    settings.OIDC_RP_CLIENT_ID = CLIENT_ID
    settings.OIDC_RP_CLIENT_SECRET = CLIENT_SECRET
    settings.OIDC_PROVIDER_NAME = "Fake IdP"
    settings.OIDC_GROUP_TEAMS = MAPPING
    settings.OIDC_REQUIRED_GROUP = ""
    discovery.forget()
    yield idp_server
    discovery.forget()


def authorize(client, next_url: str = ""):
    """Press "Sign in with …": the playground's redirect to the provider, and the provider's answer (its redirect
    back to the callback, as a path of the test client's server)."""
    start = client.get("/sso/login/" + (f"?next={next_url}" if next_url else ""))
    assert start.status_code == 302, start.content
    answer = httpx.get(start["Location"], follow_redirects=False)
    assert answer.status_code == 302, answer.text
    back = urlparse(answer.headers["location"])
    return start["Location"], f"{back.path}?{back.query}"


def sign_in(client, next_url: str = ""):
    """The whole sign-in; returns the callback's response."""
    _, callback = authorize(client, next_url)
    return client.get(callback)


def signed_in_user(client):
    from django.contrib.auth import get_user_model

    user_id = client.session.get("_auth_user_id")
    return get_user_model().objects.filter(pk=user_id).first() if user_id else None
