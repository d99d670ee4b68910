"""Login and sign-up are throttled per address and per account, with words and a 429."""

import secrets

import pytest
from django.urls import reverse

from playground.accounts import throttle
from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db


@pytest.fixture
def address():
    """A fresh client address per test, forgotten afterwards (the Redis cache outlives the test run)."""
    ip = f"10.{secrets.randbelow(250)}.{secrets.randbelow(250)}.{secrets.randbelow(250)}"
    yield ip
    for action in ("login", "signup"):
        throttle.forget(action, ip=ip)


def log_in(client, username, password, ip):
    return client.post(reverse("accounts:login"), {"username": username, "password": password}, REMOTE_ADDR=ip)


def test_ten_failed_logins_block_the_account_even_with_the_right_password(client, alice, address, settings):
    settings.LOGIN_FAILURE_LIMIT = 10
    for _ in range(10):
        assert log_in(client, "alice", "wrong", address).status_code == 200
    blocked = log_in(client, "alice", PASSWORD, address)
    assert blocked.status_code == 429
    assert "Too many attempts" in blocked.content.decode() and "Wait 15 minutes" in blocked.content.decode()
    assert int(blocked["Retry-After"]) > 800
    assert "_auth_user_id" not in client.session
    # From another address the account is still blocked (the per-account counter).
    other = f"{address}1"[:15]
    assert log_in(client, "alice", PASSWORD, other).status_code == 429
    throttle.forget("login", ip=other, username="alice")


def test_failures_from_one_address_block_that_address_for_every_account(client, alice, bob, address, settings):
    settings.LOGIN_FAILURE_LIMIT = 3
    for name in ("nobody1", "nobody2", "nobody3"):
        log_in(client, name, "wrong", address)
    assert log_in(client, "bob", PASSWORD, address).status_code == 429
    for name in ("nobody1", "nobody2", "nobody3"):
        throttle.forget("login", username=name)


def test_a_successful_login_clears_its_account_count(client, alice, address, settings):
    settings.LOGIN_FAILURE_LIMIT = 3
    log_in(client, "alice", "wrong", address)
    log_in(client, "alice", "wrong", address)
    assert log_in(client, "alice", PASSWORD, address).status_code == 302
    client.logout()
    throttle.forget("login", ip=address)
    log_in(client, "alice", "wrong", address)
    log_in(client, "alice", "wrong", address)
    assert log_in(client, "alice", PASSWORD, address).status_code == 302


def test_sign_ups_are_throttled_per_address(client, address, settings):
    settings.SIGNUP_LIMIT = 2
    for _ in range(2):
        data = {"username": f"x{secrets.token_hex(4)}", "password1": PASSWORD, "password2": PASSWORD}
        assert client.post(reverse("accounts:signup"), data, REMOTE_ADDR=address).status_code == 302
        client.logout()
    data = {"username": "late", "password1": PASSWORD, "password2": PASSWORD}
    response = client.post(reverse("accounts:signup"), data, REMOTE_ADDR=address)
    assert response.status_code == 429 and "Too many attempts" in response.content.decode()
    from django.contrib.auth import get_user_model

    assert not get_user_model().objects.filter(username="late").exists()


def test_the_client_address_comes_from_the_proxy_header_when_configured(client, alice, address, settings):
    settings.LOGIN_FAILURE_LIMIT = 2
    settings.CLIENT_IP_HEADER = "X-Forwarded-For"
    forwarded = {"HTTP_X_FORWARDED_FOR": f"203.0.113.9, {address}"}
    for _ in range(2):
        client.post(reverse("accounts:login"), {"username": "zed", "password": "x"}, **forwarded)
    # The proxy's own address is not blocked; the client's is.
    assert log_in(client, "alice", PASSWORD, "127.0.0.1").status_code == 302
    client.logout()
    response = client.post(reverse("accounts:login"), {"username": "alice", "password": PASSWORD}, **forwarded)
    assert response.status_code == 429
    throttle.forget("login", username="zed")
