"""An evaluation's template is a library prompt: made with the evaluation (named after its title, unique per owner),
edits are new versions of it, a variant may pick any version of any library prompt its owner can use (a team's
too), and every cell records the version its run sent, live and by batch."""

import pytest
from asgiref.sync import async_to_sync, sync_to_async

from playground.catalog.services import refresh_models
from playground.evaluate import batch, exports, runner, services
from playground.evaluate.models import Evaluation, Variant
from playground.prompts.models import ImmutableVersion, Prompt, PromptVersion
from playground.teams.models import Membership
from tests.conftest import client_of
from tests.evaluate.conftest import blank_run, connect, latest_cells, make_evaluation
from tests.evaluate.test_live import finished, run
from tests.fakeprovider import server as fake
from tests.prompts.conftest import make_prompt
from tests.providers.conftest import fake_connection

pytestmark = pytest.mark.needs_local_api


@pytest.mark.django_db
def test_an_evaluation_makes_its_own_library_prompt_named_after_its_title(alice_client, alice, catalog):
    Prompt.objects.create(owner=alice, name="Tone check")
    connection = alice.connections.get(is_local=True)
    alice_client.post("/evaluate/new/", {"title": "Tone check", "connection": connection.pk})
    alice_client.post("/evaluate/new/", {"title": "Tone check", "connection": connection.pk})
    first, second = Evaluation.objects.filter(owner=alice).order_by("pk")
    assert (first.prompt.name, second.prompt.name) == ("Tone check (2)", "Tone check (3)")
    assert first.prompt.owner == alice and first.prompt.team is None
    v1 = first.latest_prompt()
    assert (v1.number, v1.template, v1.author) == (1, "{{question}}", alice)
    assert v1.model_id == first.variants.get().model  # the first variant's model, as a hint in the library

    page = alice_client.post(f"/evaluate/{first.pk}/prompt/", {"system": "Brief.", "user": "Say {{question}}"})
    assert page.status_code == 302
    assert [(v.number, v.system, v.template) for v in first.versions()] == [
        (1, "", "{{question}}"),
        (2, "Brief.", "Say {{question}}"),
    ]
    assert PromptVersion.objects.get(pk=v1.pk).template == "{{question}}"  # v1 untouched
    with pytest.raises(ImmutableVersion):
        first.versions().update(template="changed")
    # The library lists it, and its page is the prompt's own.
    assert "Tone check (2)" in alice_client.get("/prompts/").text
    for page in (f"/prompts/{first.prompt.pk}/", f"/prompts/{first.prompt.pk}/v2/", f"/c/from-prompt/{v1.pk}/"):
        assert alice_client.get(page).status_code == 200, page
    detail = alice_client.get(f"/evaluate/{first.pk}/?view=editor").text
    assert "Tone check (2)@v2" in detail and f'href="/prompts/{first.prompt.pk}/"' in detail


@pytest.mark.django_db
def test_a_variant_picks_a_team_prompts_version_but_never_one_it_cannot_see(alice, bob, carol, team, catalog):
    shared = make_prompt(bob, name="Team tone", team=team, template="Team says {{question}}")
    private = make_prompt(carol, name="Carol's", template="{{question}}")
    evaluation = make_evaluation(alice, variants=2)
    _a, b = evaluation.variants.order_by("position")
    client = client_of(alice)
    url = f"/evaluate/{evaluation.pk}/variants/{b.pk}/"
    base = {f"v{b.pk}-model": b.model}
    editor = client.get(f"/evaluate/{evaluation.pk}/?view=editor").text
    assert "Team tone@v1 (Acme)" in editor and "Carol" not in editor

    refused = client.post(url, {**base, f"v{b.pk}-prompt": private.latest().pk})
    assert "prompt: choose a version of this evaluation" in refused.text
    b.refresh_from_db()
    assert b.prompt is None

    client.post(url, {**base, f"v{b.pk}-prompt": shared.latest().pk})
    b.refresh_from_db()
    assert b.prompt == shared.latest()
    grid = client.get(f"/evaluate/{evaluation.pk}/").text
    own = evaluation.latest_prompt()
    assert f'data-version="{own.pk}">{own.ref} (latest)' in grid
    assert f'data-version="{shared.latest().pk}">Team tone@v1<' in grid
    request = services.build_request(evaluation.cases.first(), b, b.prompt, None)
    assert request.body["messages"][-1] == {"role": "user", "content": "Team says q1"}
    assert request.version == shared.latest()


@pytest.mark.django_db(transaction=True)
@pytest.mark.needs_local_api
async def test_every_cell_records_the_version_its_run_sent(live_server, alice, bob, team, catalog):
    evaluation = await sync_to_async(make_evaluation)(alice, rows=2, variants=2, user="{{question}} [say:own]")
    shared = await sync_to_async(make_prompt)(bob, name="Team tone", team=team, template="{{question}} [say:team]")
    version = await sync_to_async(shared.latest)()
    await evaluation.variants.filter(position=1).aupdate(prompt=version)
    ws = await connect(evaluation.pk, alice)
    await run(ws)
    await finished(evaluation.pk)
    await ws.disconnect()
    own = await sync_to_async(evaluation.latest_prompt)()
    cells = await sync_to_async(list)(latest_cells(evaluation).select_related("variant"))
    assert {(c.variant.position, c.output, c.version_id) for c in cells} == {
        (0, "own", own.pk),
        (1, "team", version.pk),
    }

    # The template changes after the run: the cells still say what they ran with.
    await sync_to_async(services.save_prompt)(evaluation, system="", user="{{question}} [say:new]")
    assert {c.version_id for c in await sync_to_async(list)(latest_cells(evaluation))} == {
        own.pk,
        version.pk,
    }


@pytest.mark.django_db
def test_a_batch_records_the_version_each_line_was_built_from(alice, catalog):
    evaluation = make_evaluation(alice, rows=2, variants=1)
    built_with = evaluation.latest_prompt()
    _, mapping, problems, _ = batch.build(evaluation)
    assert not problems and all(key[2] == built_with.pk for key in mapping.values())
    evaluation.batch_map = mapping
    services.save_prompt(evaluation, system="", user="Edited {{question}}")  # edited while the batch runs
    outcomes = {
        cid: {"custom_id": cid, "response": {"status_code": 200, "body": {"choices": [{"message": {"content": "A"}}]}}}
        for cid in mapping
    }
    assert batch.join(evaluation, outcomes) == 2
    assert {(c.status, c.version_id) for c in latest_cells(evaluation)} == {("done", built_with.pk)}
    assert f'"version": "{built_with.ref}"' in exports.export_jsonl(evaluation)  # the record says it too


@pytest.mark.django_db
def test_a_team_version_is_not_sent_once_its_owner_has_left_the_team(alice, bob, team, catalog):
    shared = make_prompt(bob, name="Team tone", team=team, template="Team says {{question}}")
    evaluation = make_evaluation(alice, rows=1, variants=2)
    b = evaluation.variants.get(position=1)
    b.prompt = shared.latest()
    b.save()
    assert batch.build(evaluation)[2] == []
    Membership.objects.filter(team=team, user=alice).delete()
    words = "row 1, variant B: prompt: you can no longer use Team tone@v1; choose another version."
    assert batch.build(evaluation)[2] == [words]
    cell = blank_run(evaluation).cells.get(variant=b)
    assert runner._prepare(evaluation, cell.pk, False)[1].error == words
    # The page still opens and names the pick, so it can be changed.
    assert "Team tone@v1" in client_of(alice).get(f"/evaluate/{evaluation.pk}/?view=editor").text


def fake_evaluation_with_team_version(alice, bob, team, fake_openai):
    connection = fake_connection(alice, fake_openai)
    message, ok = async_to_sync(refresh_models)(connection)
    assert ok, message
    evaluation = services.create(user=alice, title="Fake", connection=connection)
    Variant.objects.filter(evaluation=evaluation).update(model=fake.CHAT_MODEL)
    services.add_variant(evaluation)
    shots = [{"role": "user", "content": "Rhine?"}, {"role": "assistant", "content": "A river."}]
    version = make_prompt(bob, name="Team tone", team=team, template="Team: {{question}}", shots=shots).latest()
    evaluation.variants.filter(position=1).update(prompt=version)
    evaluation.cases.update(values={"question": "Seine?"})
    return evaluation, version


@pytest.mark.django_db(transaction=True)
async def test_against_the_fake_provider_a_team_version_is_sent_and_recorded(
    live_server, alice, bob, team, catalog, fake_openai
):
    evaluation, version = await sync_to_async(fake_evaluation_with_team_version)(alice, bob, team, fake_openai)
    ws = await connect(evaluation.pk, alice)
    await run(ws)
    await finished(evaluation.pk)
    await ws.disconnect()
    own = await sync_to_async(evaluation.latest_prompt)()
    cells = await sync_to_async(list)(latest_cells(evaluation).select_related("variant"))
    assert sorted((c.variant.position, c.status, c.version_id) for c in cells) == [
        (0, "done", own.pk),
        (1, "done", version.pk),
    ]
    sent = [b["messages"] for b in fake_openai.state.bodies("/chat/completions")]
    assert [{"role": "user", "content": "Seine?"}] in sent
    assert [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Rhine?"},
        {"role": "assistant", "content": "A river."},
        {"role": "user", "content": "Team: Seine?"},
    ] in sent
