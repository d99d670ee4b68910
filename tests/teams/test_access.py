"""Nobody outside a team sees any of it (404 everywhere); members use its connections but never manage them."""

import pytest
from django.urls import reverse

from playground.catalog.forms import ModelPickerForm
from playground.connections.models import Connection
from playground.rerank.forms import RerankForm
from playground.sharing.models import Share
from playground.teams.models import Membership, UsageRecord
from tests.teams.conftest import KEY_MIDDLE, TEAM_KEY, client_for

pytestmark = pytest.mark.django_db


def team_routes(team, connection, invite, membership):
    """Every team route but join (which takes a token, not a team)."""
    pk, cid, mid, iid = team.pk, connection.pk, membership.pk, invite.pk
    return [
        ("get", reverse("teams:detail", args=[pk])),
        ("get", reverse("teams:delete", args=[pk])),
        ("post", reverse("teams:delete", args=[pk])),
        ("post", reverse("teams:leave", args=[pk])),
        ("post", reverse("teams:transfer", args=[pk])),
        ("post", reverse("teams:invite", args=[pk])),
        ("post", reverse("teams:revoke_invite", args=[pk, iid])),
        ("post", reverse("teams:remove_member", args=[pk, mid])),
        ("post", reverse("teams:set_role", args=[pk, mid])),
        ("post", reverse("teams:set_budget", args=[pk, mid])),
        ("get", reverse("teams:add_connection", args=[pk])),
        ("post", reverse("teams:add_connection", args=[pk])),
        ("get", reverse("teams:edit_connection", args=[pk, cid])),
        ("post", reverse("teams:edit_connection", args=[pk, cid])),
        ("post", reverse("teams:revoke_connection", args=[pk, cid])),
        ("post", reverse("teams:delete_connection", args=[pk, cid])),
        ("get", reverse("teams:usage", args=[pk])),
        ("get", reverse("teams:usage_csv", args=[pk])),
        ("get", reverse("teams:audit", args=[pk])),
        # The team connection through the other apps' routes.
        ("get", reverse("connections:edit", args=[cid])),
        ("post", reverse("connections:delete", args=[cid])),
        ("post", reverse("connections:test", args=[cid])),
        ("get", reverse("catalog:index", args=[cid])),
        ("post", reverse("catalog:refresh", args=[cid])),
        ("get", reverse("catalog:picker") + f"?connection={cid}"),
    ]


def test_a_non_member_gets_404_for_every_team_route(charlie, team, team_connection, invite, alice):
    membership = Membership.objects.get(team=team, user=alice)
    client = client_for(charlie)
    for method, url in team_routes(team, team_connection, invite, membership):
        response = getattr(client, method)(url)
        assert response.status_code == 404, (method, url, response.status_code)
    assert Membership.objects.filter(team=team).count() == 2
    assert Connection.objects.get(pk=team_connection.pk).revoked is False
    assert client.get(reverse("teams:index")).content.decode().count("Research") == 0


def test_a_member_gets_404_for_the_routes_of_owners_and_admins(bob, team, team_connection, invite, alice):
    membership = Membership.objects.get(team=team, user=alice)
    client = client_for(bob)
    member_routes = {reverse("teams:detail", args=[team.pk]), reverse("teams:leave", args=[team.pk])}
    for method, url in team_routes(team, team_connection, invite, membership):
        if url in member_routes or url.startswith(reverse("catalog:picker")):
            continue
        response = getattr(client, method)(url)
        assert response.status_code == 404, (method, url, response.status_code)
    assert Membership.objects.get(pk=membership.pk).role == "owner"


def test_the_team_page_never_shows_the_key_and_a_member_sees_no_hint(bob_client, alice, team, team_connection):
    page = bob_client.get(reverse("teams:detail", args=[team.pk])).content.decode()
    assert "Team gateway" in page
    assert TEAM_KEY not in page and KEY_MIDDLE not in page and team_connection.key_hint not in page
    owner_page = client_for(alice).get(reverse("teams:detail", args=[team.pk])).content.decode()
    assert TEAM_KEY not in owner_page and KEY_MIDDLE not in owner_page and team_connection.key_hint in owner_page


def test_pickers_offer_the_team_connection_to_members_only(bob, charlie, team, team_connection):
    bob_picker = ModelPickerForm(user=bob, kind="chat")
    assert team_connection in bob_picker.fields["connection"].queryset
    assert "Team gateway (team Research)" in [c.label for c in bob_picker.fields["connection"].queryset]
    assert team_connection not in ModelPickerForm(user=charlie, kind="chat").fields["connection"].queryset
    # Posting it anyway is an invalid choice, named.
    form = RerankForm({"connection": team_connection.pk, "query": "q", "documents": "a\nb"}, user=charlie)
    assert not form.is_valid() and "connection" in form.errors


def test_leaving_removal_and_revocation_take_the_connection_out_of_the_pickers(bob, team, team_connection, alice):
    assert Connection.objects.for_user(bob).filter(pk=team_connection.pk).exists()
    Connection.objects.filter(pk=team_connection.pk).update(revoked=True)
    assert not Connection.objects.for_user(bob).filter(pk=team_connection.pk).exists()
    Connection.objects.filter(pk=team_connection.pk).update(revoked=False)
    client_for(bob).post(reverse("teams:leave", args=[team.pk]))
    assert not Connection.objects.for_user(bob).filter(pk=team_connection.pk).exists()
    # alice added it, but it is the team's: it is not one of her own connections either once she is out.
    assert not Connection.objects.for_user(alice).filter(team=None, pk=team_connection.pk).exists()


def test_team_only_shares_open_for_members_and_404_for_everyone_else(bob, charlie, alice, team, client):
    from playground.rerank.models import RerankRun

    run = RerankRun.objects.create(
        owner=alice, model="local/rerank", query="q", documents=["a", "b"], results=[{"index": 0, "relevance_score": 1}]
    )
    response = client_for(alice).post(
        reverse("sharing:source", args=["rerank", run.pk]), {"visibility": "team", "team": team.pk, "expiry": "7d"}
    )
    assert response.status_code == 302
    share = Share.objects.for_source(run).get()
    assert share.visibility == "team" and share.team == team
    url = reverse("sharing:view", args=[share.token])
    assert client_for(bob).get(url).status_code == 200
    assert client_for(charlie).get(url).status_code == 404
    assert client.get(url).status_code == 404  # anonymous
    # It is in the team library, and in the audit log (made, then revoked).
    assert share.title in client_for(bob).get(reverse("teams:detail", args=[team.pk])).content.decode()
    client_for(alice).post(reverse("sharing:revoke", args=[share.pk]))
    assert list(team.audit.values_list("action", flat=True)[:2]) == ["share_revoked", "share_made"]


def test_a_team_share_needs_a_team_of_the_sharer(alice, charlie, team):
    from playground.rerank.models import RerankRun

    run = RerankRun.objects.create(owner=charlie, model="m", query="q", documents=["a"], results=[])
    response = client_for(charlie).post(
        reverse("sharing:source", args=["rerank", run.pk]), {"visibility": "team", "team": team.pk, "expiry": "7d"}
    )
    assert response.status_code == 200 and "team: choose one of your teams." in response.content.decode()
    response = client_for(charlie).post(
        reverse("sharing:source", args=["rerank", run.pk]), {"visibility": "team", "expiry": "7d"}
    )
    assert "team: choose the team whose members may open the link." in response.content.decode()
    assert not Share.objects.exists()


def test_usage_page_and_csv_for_owners(alice, bob, team, team_connection):
    UsageRecord.objects.create(
        team=team,
        connection=team_connection,
        user=bob,
        username="bob",
        kind="chat",
        model="local/chat",
        prompt_tokens=12,
        completion_tokens=30,
        reasoning_tokens=5,
        status="complete",
    )
    UsageRecord.objects.create(
        team=team,
        connection=team_connection,
        user=bob,
        username="=cmd",
        kind="rerank",
        model="local/rerank",
        prompt_tokens=7,
        documents=3,
        status="ok",
    )
    client = client_for(alice)
    page = client.get(reverse("teams:usage", args=[team.pk])).content.decode()
    assert 'id="usage-members"' in page and "local/rerank" in page and '<svg class="usage-bar"' in page
    csv_text = client.get(reverse("teams:usage_csv", args=[team.pk])).content.decode()
    lines = csv_text.strip().splitlines()
    assert lines[0] == "day,member,kind,model,status,requests,prompt,completion,reasoning,characters,documents"
    assert any(",bob,chat,local/chat,complete,1,12,30,5,0,0" in line for line in lines)
    assert any(",'=cmd,rerank,local/rerank,ok,1,7,0,0,0,3" in line for line in lines)


def test_a_member_forks_a_run_from_the_team_library_and_an_outsider_cannot(alice, bob, charlie, team):
    from playground.rerank.models import RerankRun

    run = RerankRun.objects.create(
        owner=alice, model="local/reranker", query="rivers", documents=["a", "b"], results=[]
    )
    client_for(alice).post(
        reverse("sharing:source", args=["rerank", run.pk]), {"visibility": "team", "team": team.pk, "expiry": "7d"}
    )
    share = Share.objects.for_source(run).get()
    fork_url = reverse("sharing:fork", args=[share.token])
    bob_local = Connection.objects.create(owner=bob, name="Bob's own", base_url="https://api.example.com/v1")
    assert client_for(charlie).post(fork_url, {"connection": bob_local.pk}).status_code == 404
    response = client_for(bob).post(fork_url, {"connection": bob_local.pk})
    copy = RerankRun.objects.get(owner=bob)
    assert response.status_code == 302 and copy.query == "rivers" and copy.connection == bob_local
    # The original stays alice's alone: bob gets 404 on it.
    assert client_for(bob).get(reverse("rerank:detail", args=[run.pk])).status_code == 404


def test_a_team_conversation_link_is_live_and_a_removed_member_stops_watching(alice, bob, team):
    from playground.chat.models import Conversation
    from playground.chat.sharing import live

    conversation = Conversation.objects.create(owner=alice, title="Plans")
    client_for(alice).post(
        reverse("sharing:source", args=["conversation", conversation.pk]),
        {"visibility": "team", "team": team.pk, "expiry": "7d"},
    )
    share = Share.objects.for_source(conversation).get()
    assert share.live and live.live_share(share.token, bob) == share and live.still_open(share.pk, bob)
    Membership.objects.filter(team=team, user=bob).delete()
    assert not live.still_open(share.pk, bob) and live.live_share(share.token, bob) is None
