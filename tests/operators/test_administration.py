"""The administration page: superusers only; accounts with their sign-ins, teams, usage and sessions;
deactivate (sessions end, sockets close, answers stop, share links stop; data kept) and reactivate, audited."""

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import Client
from django.utils import timezone

from playground.asgi import application
from playground.chat.models import Conversation, Message
from playground.connections.models import ensure_local_connection
from playground.lib.sockets import CLOSED, AccountSockets
from playground.operators import services
from playground.operators.models import AuditEvent
from playground.routing import websocket_urlpatterns
from playground.sharing.freeze import freeze
from playground.sharing.models import Share
from playground.teams.models import ADMIN, Membership, Team
from tests.conftest import PASSWORD

ORIGIN = [(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1")]


@pytest.fixture
def root(django_user_model):
    return django_user_model.objects.create_superuser("root", "root@example.com", PASSWORD)


@pytest.fixture
def root_client(root):
    client = Client()
    client.force_login(root)
    return client


def signed_in(user) -> Client:
    client = Client()
    assert client.post("/accounts/login/", {"username": user.username, "password": PASSWORD}).status_code == 302
    return client


def conversation_of(user) -> Conversation:
    return Conversation.objects.create(owner=user, connection=ensure_local_connection(user), model_id="local/chat")


@pytest.mark.django_db
def test_only_superusers_reach_the_page_and_its_actions(alice_client, alice, bob):
    assert alice_client.get("/operators/users/").status_code == 404
    assert alice_client.post(f"/operators/users/{bob.pk}/deactivate/").status_code == 404
    bob.refresh_from_db()
    assert bob.is_active
    assert Client().get("/operators/users/").status_code == 302  # to the sign-in page


@pytest.mark.django_db
def test_the_page_lists_sign_ins_teams_usage_this_month_and_open_sessions(root_client, alice, catalog):
    signed_in(alice)
    signed_in(alice)
    team = Team.objects.create(name="Demos")
    Membership.objects.create(team=team, user=alice, role=ADMIN)
    conversation = conversation_of(alice)
    for prompt, completion in ((100, 20), (1000, 200)):
        Message.objects.create(
            conversation=conversation,
            role="assistant",
            content="ok",
            usage={"prompt_tokens": prompt, "completion_tokens": completion},
        )
    page = root_client.get("/operators/users/").content.decode()
    row = page[page.index('data-account="alice"') :].split("</tr>")[0]
    assert "Demos" in row and "admin" in row
    assert "2 answers, 1,320 tokens" in row
    assert 'data-label="Sessions" class="mono">2<' in row
    assert "never" not in row  # alice's last sign-in is shown


@pytest.mark.django_db
def test_deactivation_ends_sessions_stops_share_links_keeps_data_and_is_audited(root_client, root, alice, catalog):
    alice_client = signed_in(alice)
    conversation = conversation_of(alice)
    share = Share.objects.create(owner=alice, source=conversation, title="t")
    freeze(share)
    assert Client().get(f"/s/{share.token}/").status_code == 200

    response = root_client.post(f"/operators/users/{alice.pk}/deactivate/", follow=True)
    assert "alice deactivated by root: 1 session(s) ended" in response.content.decode()
    alice.refresh_from_db()
    assert not alice.is_active
    assert alice_client.get("/teams/").status_code == 302  # signed out
    assert Client().get(f"/s/{share.token}/").status_code == 404
    assert Conversation.objects.filter(pk=conversation.pk).exists()
    failed = Client().post("/accounts/login/", {"username": "alice", "password": PASSWORD})
    assert failed.status_code == 200  # a deactivated account cannot sign in with its password

    root_client.post(f"/operators/users/{alice.pk}/reactivate/")
    alice.refresh_from_db()
    assert alice.is_active
    assert Client().get(f"/s/{share.token}/").status_code == 200
    assert signed_in(alice)
    actions = list(AuditEvent.objects.filter(subject=alice, actor=root).values_list("action", flat=True))
    assert actions == ["reactivated", "deactivated"]
    assert "alice reactivated by root" in root_client.get("/operators/users/").content.decode()


@pytest.mark.django_db
def test_a_superuser_cannot_deactivate_themselves(root_client, root):
    response = root_client.post(f"/operators/users/{root.pk}/deactivate/", follow=True)
    assert "You cannot deactivate your own account" in response.content.decode()
    root.refresh_from_db()
    assert root.is_active and not AuditEvent.objects.exists()


def test_every_websocket_route_closes_with_its_account():
    """A new consumer that forgets the mixin would keep a deactivated user's socket open."""
    consumers = {route.callback.consumer_class for route in websocket_urlpatterns}
    assert len(consumers) >= 3
    assert all(issubclass(consumer, AccountSockets) for consumer in consumers), consumers


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_deactivation_closes_the_users_open_sockets_and_no_one_elses(alice, bob, root, catalog):
    alice_chat = await database_sync_to_async(conversation_of)(alice)
    bob_chat = await database_sync_to_async(conversation_of)(bob)
    sockets = []
    for user, conversation in ((alice, alice_chat), (bob, bob_chat)):
        communicator = WebsocketCommunicator(application, f"/ws/chat/{conversation.pk}/", headers=ORIGIN)
        communicator.scope["user"] = user
        connected, _ = await communicator.connect()
        assert connected
        sockets.append(communicator)
    alice_socket, bob_socket = sockets

    await database_sync_to_async(services.deactivate)(alice, actor=root)

    closed = await alice_socket.receive_output(timeout=3)
    assert closed == {"type": "websocket.close", "code": CLOSED}
    assert await bob_socket.receive_nothing(timeout=0.3)
    await bob_socket.disconnect()
    await alice_socket.disconnect()


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_deactivation_closes_the_live_viewers_of_the_users_links(alice, root, catalog):
    def live_share():
        share = Share.objects.create(owner=alice, source=conversation_of(alice), title="t", live=True)
        freeze(share)
        return share

    share = await database_sync_to_async(live_share)()
    viewer = WebsocketCommunicator(application, f"/ws/s/{share.token}/", headers=ORIGIN)
    connected, _ = await viewer.connect()
    assert connected

    await database_sync_to_async(services.deactivate)(alice, actor=root)

    assert await viewer.receive_json_from(timeout=3) == {"type": "revoked"}
    assert (await viewer.receive_output(timeout=3))["type"] == "websocket.close"
    await viewer.disconnect()


@pytest.mark.django_db(transaction=True)
def test_deactivation_stops_the_users_running_answers(alice, bob, root, catalog, monkeypatch):
    stopped = []

    async def request_stop(message_id):
        stopped.append(message_id)

    monkeypatch.setattr(services, "request_stop", request_stop)
    # Stamped as a live generation stamps its row: the heartbeat sweep of a server an earlier test started (this
    # test's rows are committed) ends a streaming row never stamped as interrupted, and nothing would be stopped.
    live = {"role": "assistant", "status": Message.STREAMING, "heartbeat": timezone.now()}
    running = Message.objects.create(conversation=conversation_of(alice), **live)
    Message.objects.create(conversation=conversation_of(bob), **live)
    services.deactivate(alice, actor=root)
    assert stopped == [running.pk]


@pytest.mark.django_db
def test_the_page_costs_the_same_queries_for_3_accounts_as_for_30(root_client, django_user_model, catalog):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert root_client.get("/operators/users/").status_code == 200
        return len(captured)

    team = Team.objects.create(name="Demos")
    for n in range(2):
        Membership.objects.create(team=team, user=django_user_model.objects.create_user(f"u{n}"), role=ADMIN)
    few = queries()
    for n in range(2, 29):
        Membership.objects.create(team=team, user=django_user_model.objects.create_user(f"u{n}"), role=ADMIN)
    assert queries() == few, few
