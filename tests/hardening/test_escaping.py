"""Text that came from a user (a key hint) is escaped in help texts; Django's own HTML help stays HTML."""

import pytest
from django.urls import reverse

from playground.connections.models import Connection

pytestmark = pytest.mark.django_db


def test_a_key_hint_is_escaped_in_the_edit_form(alice_client, alice):
    connection = Connection(owner=alice, name="Hosted", base_url="https://api.example.com/v1")
    connection.set_key("sk-abcdefgh<i>x</b>")
    connection.save()
    page = alice_client.get(reverse("connections:edit", args=[connection.pk])).content.decode()
    assert "(sk-…&lt;/b&gt;)" in page
    assert "</b>)" not in page


def test_password_rules_still_render_as_a_list(client):
    page = client.get(reverse("accounts:signup")).content.decode()
    assert "<ul><li>Your password can’t be too similar" in page
