"""Issue 37.2: chat, speech, rerank, batches and a shared batch's fork form start on the last used connection of
their kind, and without history on the user's own connection before a team's (so a personal request is never
charged to a team by default, nor refused when the team's budget is spent)."""

import re

import pytest
from django.urls import reverse

from playground.batches.models import Batch
from playground.chat.models import Conversation
from playground.connections.models import Connection, add_team_local_connection, ensure_local_connection
from playground.rerank.models import RerankRun
from playground.speech.models import SpeechClip
from playground.teams.models import OWNER, Membership, Team
from tests.factories import add_connection
from tests.sharing.test_kinds import batch  # noqa: F401 - a fixture

pytestmark = [pytest.mark.django_db, pytest.mark.needs_local_api]

PAGES = ["chat:index", "speech:index", "rerank:index", "batches:index"]


@pytest.fixture
def team_connection(alice):
    """A team of alice's whose built-in connection is listed before her own Local one ("Built-in …" < "Local")."""
    ensure_local_connection(alice)
    team = Team.objects.create(name="Research")
    Membership.objects.create(team=team, user=alice, role=OWNER)
    connection = add_team_local_connection(team, alice)
    assert Connection.objects.for_user(alice).first() == connection
    return connection


def started_on(page: str) -> int:
    """The connection a page's form starts on: the selected option of its connection select."""
    select = re.search(r'<select name="connection"[^>]*>(.*?)</select>', page, re.S)
    assert select, "no connection select on the page"
    return int(re.search(r'<option value="(\d+)"[^>]*selected', select.group(1)).group(1))


def made_on(alice, connection, url_name: str) -> None:
    """A row of the page's kind on `connection`: the last used."""
    if url_name == "chat:index":
        Conversation.objects.create(owner=alice, connection=connection, model_id="local/chat")
    elif url_name == "speech:index":
        SpeechClip.objects.create(owner=alice, connection=connection, model="local/tts", text="Hi")
    elif url_name == "rerank:index":
        RerankRun.objects.create(owner=alice, connection=connection, model="local/rerank", query="q", documents=["d"])
    else:
        Batch.objects.create(owner=alice, connection=connection, remote_id="batch_x", input_file_id="f")


@pytest.mark.parametrize("url_name", PAGES)
def test_without_history_a_form_starts_on_the_users_own_connection(alice_client, alice, team_connection, url_name):
    own = Connection.objects.get(owner=alice, team=None, is_local=True)
    assert started_on(alice_client.get(reverse(url_name)).content.decode()) == own.pk


@pytest.mark.parametrize("url_name", PAGES)
def test_a_form_starts_on_the_last_used_connection(alice_client, alice, team_connection, url_name):
    hosted = add_connection(alice, name="Zeta hosted")
    made_on(alice, hosted, url_name)
    assert started_on(alice_client.get(reverse(url_name)).content.decode()) == hosted.pk
    made_on(alice, team_connection, url_name)  # used since: the team's, chosen on purpose
    assert started_on(alice_client.get(reverse(url_name)).content.decode()) == team_connection.pk


def test_a_shared_batchs_fork_form_starts_on_the_last_used_connection(
    alice_client,
    alice,
    bob,
    team_connection,
    make_share,
    batch,  # noqa: F811
):
    Batch.objects.filter(pk=batch.pk).update(owner=bob, connection=ensure_local_connection(bob))
    batch.refresh_from_db()
    share = make_share(batch)  # bob's batch: alice has no history of batches, her own before the team's
    own = Connection.objects.get(owner=alice, team=None, is_local=True)
    fork = reverse("sharing:fork", args=[share.token])
    assert started_on(alice_client.get(fork).content.decode()) == own.pk
    made_on(alice, team_connection, "batches:index")  # her last batch went through the team's: chosen on purpose
    assert started_on(alice_client.get(fork).content.decode()) == team_connection.pk
    made_on(alice, add_connection(alice, name="Zeta hosted"), "batches:index")  # it lists no model: not offered
    assert started_on(alice_client.get(fork).content.decode()) == own.pk
