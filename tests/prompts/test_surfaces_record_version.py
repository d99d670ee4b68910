"""Every surface that uses a prompt version records which one it used: a conversation started from it, an
evaluation's cells, a batch made from it and a compare column run as it. One team prompt's version, used by a
member on each surface in turn, over real HTTP and the evaluation's websocket, against the local API."""

import pytest
from asgiref.sync import async_to_sync
from django.apps import apps

from playground.batches.models import Batch
from playground.chat.models import Conversation, Message
from playground.evaluate.models import Cell
from playground.prompts.models import PromptVersion
from playground.teams.models import MEMBER, OWNER, Membership, Team
from tests.batches.conftest import HTMX, local_connection
from tests.evaluate.conftest import connect, make_evaluation
from tests.evaluate.test_live import finished, run
from tests.prompts.conftest import make_prompt

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]
TEMPLATE = "Name a river in {{question}}. [say:The Loire]"
# Where a use of a prompt version is recorded; a new surface that uses versions adds its field here.
RECORDS = {
    ("chat", "Conversation", "prompt_version"),
    ("chat", "Message", "prompt_version"),
    ("evaluate", "Cell", "version"),
    ("evaluate", "Variant", "prompt"),
    ("batches", "Batch", "prompt_version"),
}


def test_every_key_to_a_prompt_version_outside_prompts_is_a_known_record():
    found = {
        (model._meta.app_label, model.__name__, field.name)
        for model in apps.get_models()
        for field in model._meta.get_fields()
        if field.many_to_one and field.related_model is PromptVersion and model._meta.app_label != "prompts"
    }
    assert found - {("sharing", "Share", "source")} == RECORDS


def _evaluate(alice, version):
    evaluation = make_evaluation(alice, rows=2, variants=2)
    evaluation.variants.filter(position=1).update(prompt=version)

    async def go():
        ws = await connect(evaluation.pk, alice)
        await run(ws)
        await finished(evaluation.pk)
        await ws.disconnect()

    async_to_sync(go)()
    return evaluation


def test_each_surface_records_the_version_it_used(alice_http, alice, bob, catalog):
    team = Team.objects.create(name="Acme")
    Membership.objects.create(team=team, user=bob, role=OWNER)
    Membership.objects.create(team=team, user=alice, role=MEMBER)
    version = make_prompt(bob, name="rivers", team=team, versions=2, template=TEMPLATE, system="").latest()

    # Chat: a conversation started from the version.
    started = alice_http.post(f"/c/from-prompt/{version.pk}/", data={"var_question": "France"})
    assert started.status_code == 302, started.text[:2000]
    conversation = Conversation.objects.get(owner=alice)
    assert (conversation.prompt_version, conversation.prompt_ref) == (version, "rivers@v2")

    # Evaluate: the cells of a variant on the version.
    evaluation = _evaluate(alice, version)
    cells = Cell.objects.filter(evaluation=evaluation, variant__position=1)
    assert [(c.status, c.version_id, c.output) for c in cells] == [("done", version.pk, "The Loire")] * 2

    # Batches: a batch made from the version and rows of variables.
    connection = local_connection(alice)
    made = alice_http.post(
        "/batches/new/",
        data={
            "connection": connection.pk,
            "source": "version",
            "version": version.pk,
            "variables": "question\nFrance\nSpain\n",
            "completion_window": "24h",
        },
        headers=HTMX,
    )
    assert "created with 2 requests" in made.text
    assert Batch.objects.get(owner=alice).prompt_version == version

    # Compare: a column run as the version, beside the panel's own setup.
    compared = alice_http.post(
        f"/c/{conversation.pk}/compare/",
        data={"content": "And in Spain?", "model_1": "local/chat", "model_2": "local/chat", "version_2": version.pk},
        headers=HTMX,
    )
    assert compared.status_code == 200, compared.text[:2000]
    columns = Message.objects.filter(conversation=conversation, role="assistant").exclude(compare="").order_by("pk")
    assert [m.prompt_version_id for m in columns] == [None, version.pk]
