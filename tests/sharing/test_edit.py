"""Editable links: title, visibility, team, expiry and live change at the same URL; the list says when each link
was made and updated, how often it was viewed and how many watch it now."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import AnonymousUser
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from playground.chat.sharing import live as share_live
from playground.sharing.models import Share, Watcher

pytestmark = [pytest.mark.django_db, pytest.mark.needs_local_api]


def edit(client, share: Share, **data):
    fields = {"title": share.title, "visibility": share.visibility, "expiry": "keep", "live": "on" * share.live}
    return client.post(reverse("sharing:edit", args=[share.pk]), {**fields, **data})


def test_the_owner_changes_title_visibility_and_expiry_at_the_same_url(alice_client, bob, conversation, make_share):
    share = make_share(conversation, visibility=Share.ANYONE)
    share.set_expiry("1h")
    share.save()
    token = share.token
    assert Client().get(reverse("sharing:view", args=[token])).status_code == 200

    response = edit(alice_client, share, title="Tides, explained", visibility=Share.SIGNED_IN, expiry="30d")
    assert response.status_code == 302
    share.refresh_from_db()
    assert share.token == token and share.title == "Tides, explained" and share.visibility == Share.SIGNED_IN
    assert share.expires - timezone.now() > timedelta(days=29)
    assert Client().get(reverse("sharing:view", args=[token])).status_code == 404
    signed_in = Client()
    signed_in.force_login(bob)
    assert "Tides, explained" in signed_in.get(reverse("sharing:view", args=[token])).content.decode()

    # Updating the content keeps the title the owner chose.
    alice_client.post(reverse("sharing:update", args=[share.pk]))
    share.refresh_from_db()
    assert share.title == "Tides, explained"


def test_an_expiry_is_kept_extended_or_shortened(alice_client, conversation, make_share):
    share = make_share(conversation)
    share.set_expiry("7d")
    share.save()
    before = share.expires
    edit(alice_client, share, expiry="keep")
    share.refresh_from_db()
    assert share.expires == before
    edit(alice_client, share, expiry="1h")
    share.refresh_from_db()
    assert share.expires < before and share.expires - timezone.now() < timedelta(hours=1, minutes=1)
    edit(alice_client, share, expiry="never")
    share.refresh_from_db()
    assert share.expires is None


def test_a_live_viewer_the_link_no_longer_admits_is_closed_out(alice_client, conversation, make_share):
    share = make_share(conversation, live=True)
    assert share_live.still_open(share.pk, AnonymousUser())
    edit(alice_client, share, visibility=Share.SIGNED_IN)
    assert not share_live.still_open(share.pk, AnonymousUser())
    edit(alice_client, share, visibility=Share.ANYONE, live="")
    share.refresh_from_db()
    assert not share.live and not share_live.still_open(share.pk, AnonymousUser())


def test_only_the_owner_edits_and_bad_input_is_named(alice_client, bob, conversation, make_share):
    share = make_share(conversation)
    other = Client()
    other.force_login(bob)
    assert other.get(reverse("sharing:edit", args=[share.pk])).status_code == 404
    assert edit(other, share, title="Mine now").status_code == 404

    page = edit(alice_client, share, title="x" * 201).content.decode()
    assert "title: at most 200 characters." in page
    page = edit(alice_client, share, visibility=Share.TEAM).content.decode()
    assert "team: choose the team whose members may open the link." in page
    page = edit(alice_client, share, expiry="forever").content.decode()
    assert "Select a valid choice" in page
    share.refresh_from_db()
    assert share.title != "Mine now" and share.visibility == Share.ANYONE


def test_the_list_shows_created_updated_views_and_watching_now(alice_client, conversation, make_share):
    share = make_share(conversation, live=True)
    Share.objects.filter(pk=share.pk).update(views=7)
    Watcher.objects.create(share=share, channel="viewer-1")
    Watcher.objects.create(share=share, channel="viewer-2")
    Watcher.objects.create(share=share, channel="gone", seen=timezone.now() - timedelta(minutes=5))
    page = alice_client.get(reverse("sharing:index")).content.decode()
    for heading in ("Created", "Updated", "Views", "Watching now"):
        assert f"<th>{heading}</th>" in page
    row = page.split(f'id="share-{share.pk}"')[1].split("</tr>")[0]
    assert '<td data-label="Views" class="mono"' in row and ">7</td>" in row
    assert '<td data-label="Watching now" class="mono">2</td>' in row
    assert share.created.strftime("%b %-d") in row
    assert reverse("sharing:edit", args=[share.pk]) in row
