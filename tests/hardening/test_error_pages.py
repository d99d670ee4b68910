"""Issue 37.5: 400, 403, 404 and 500 answer a page in the site's layout, in words, with a way back (signed in or
not), and JSON with a `type` for JSON clients; the 500 page needs neither the database nor who is signed in."""

import json

import pytest
from django.db import OperationalError
from django.test import Client, RequestFactory, override_settings

from playground.lib import errors

pytestmark = [pytest.mark.django_db, pytest.mark.needs_local_api]

LAYOUT = '<header class="topbar">'
BACK = '<a class="btn btn-primary" href="/">Back to the playground</a>'
SIGN_IN = '<a class="btn btn-primary" href="/accounts/login/">Sign in</a>'


def html(response) -> str:
    assert response["Content-Type"].startswith("text/html")
    return response.content.decode()


@pytest.mark.parametrize("path", ["/c/999999/", "/evaluate/99999/", "/no-such-page/"])
def test_a_signed_in_404_is_a_page_of_the_site_with_the_way_back(alice_client, path):
    page = html(response := alice_client.get(path))
    assert response.status_code == 404
    assert LAYOUT in page and 'aria-label="Main"' in page and "<h1>Page not found</h1>" in page
    assert "There is nothing at this address" in page and BACK in page and "Not Found</h1>" not in page


def test_an_anonymous_404_says_so_with_a_way_to_sign_in(client):
    page = html(response := client.get("/no-such-page/"))
    assert response.status_code == 404 and LAYOUT in page and "<h1>Page not found</h1>" in page and SIGN_IN in page


def test_a_json_client_gets_json_with_a_type(alice_client):
    response = alice_client.get("/c/999999/", HTTP_ACCEPT="application/json")
    assert response.status_code == 404 and json.loads(response.content)["error"]["type"] == "not_found"
    anonymous = Client().get("/no-such-page/", HTTP_ACCEPT="application/json")
    assert anonymous.status_code == 404 and json.loads(anonymous.content)["error"]["type"] == "not_found"


def test_a_400_is_a_page_in_words(alice_client):
    page = html(response := alice_client.get("/", HTTP_HOST="elsewhere.example"))
    assert response.status_code == 400 and LAYOUT in page and "<h1>This request cannot be read</h1>" in page


def test_a_refused_form_is_a_403_page_in_words(alice):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(alice)
    page = html(response := browser.post("/connections/new/", {"name": "x"}))
    assert response.status_code == 403 and LAYOUT in page and "<h1>The form expired</h1>" in page
    assert "nothing was saved" in page and BACK in page and "CSRF verification failed" not in page


@override_settings(ROOT_URLCONF="tests.hardening.error_urls")
def test_a_403_and_a_500_are_pages_of_the_site(alice):
    browser = Client(raise_request_exception=False)
    browser.force_login(alice)
    page = html(response := browser.get("/test-refused/"))
    assert response.status_code == 403 and LAYOUT in page and "<h1>Not allowed</h1>" in page and BACK in page
    page = html(response := browser.get("/test-broken/"))
    assert response.status_code == 500 and LAYOUT in page and "<h1>Something went wrong</h1>" in page
    assert errors.FAILED in page and BACK in page and "a bug" not in page
    assert json.loads(browser.get("/test-broken/", HTTP_ACCEPT="application/json").content)["error"] == {
        "type": "server_error",
        "message": errors.FAILED,
    }


class Unreadable:
    def __getattr__(self, name):
        raise AssertionError(f"the 500 page read request.{name}")


def test_the_500_page_needs_no_database_and_no_user(django_assert_num_queries):
    request = RequestFactory().get("/c/1/")
    request.user = request.session = Unreadable()
    with django_assert_num_queries(0):
        try:
            raise OperationalError("connection refused")
        except OperationalError:
            response = errors.server_error(request)
    page = html(response)
    assert response.status_code == 503 and LAYOUT in page and errors.DATABASE_DOWN in page and BACK in page
