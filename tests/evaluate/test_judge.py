"""The model grader: a rubric in words, a judge model from the catalog, pass/fail or a 1–5 score with its reason,
its own usage counted. Against the local API (whose model answers judge prompts deterministically) and against
the independent fake provider on a team connection (whose echo is no verdict, and whose usage the team is charged)."""

import json

import pytest
from asgiref.sync import async_to_sync, sync_to_async

from playground.catalog.services import refresh_models
from playground.evaluate import graders, services
from playground.evaluate.models import Cell, TestCase, Variant
from playground.teams.models import OWNER, Membership, Team, UsageRecord
from tests.evaluate.conftest import blank_run, connect, latest_cells, set_template
from tests.evaluate.test_live import finished, run
from tests.fakeprovider import server as fake
from tests.providers.conftest import fake_connection

pytestmark = [pytest.mark.django_db(transaction=True)]
SAY = "{{question}} [say:{{question}}]"


def with_judge(evaluation, *, model: str, rubric: str, scale: str = "pass", answers=("Paris", "Lyon")):
    set_template(evaluation, SAY)
    evaluation.cases.all().delete()
    TestCase.objects.bulk_create(
        [TestCase(evaluation=evaluation, position=i, values={"question": a}) for i, a in enumerate(answers)]
    )
    evaluation.variants.update(graders={"judge": {"rubric": rubric, "model": model, "scale": scale}})
    return evaluation


def local_evaluation(alice, **judge):
    connection = alice.connections.get(is_local=True)
    return with_judge(services.create(user=alice, title="Judge", connection=connection), **judge)


async def run_all(evaluation, user):
    ws = await connect(evaluation.pk, user)
    events = await run(ws)
    await finished(evaluation.pk)
    await ws.disconnect()
    cells = await sync_to_async(list)(latest_cells(evaluation).order_by("case__position"))
    return events, cells


@pytest.mark.needs_local_api
async def test_the_local_judge_passes_and_fails_by_the_rubric_with_its_reason(live_server, alice, catalog):
    evaluation = await sync_to_async(local_evaluation)(alice, model="local/chat", rubric='Names the city "Paris".')
    events, cells = await run_all(evaluation, alice)
    first, second = (cell.grades["judge"] for cell in cells)
    assert first["pass"] is True and first["detail"] == "The answer mentions “Paris”."
    assert second["pass"] is False and second["detail"] == "The answer does not mention “Paris”."
    assert first["model"] == "local/chat" and first["prompt_tokens"] > 0 and first["completion_tokens"] > 0
    assert [cell.passed for cell in cells] == [True, False]
    assert "local/chat passed it: The answer mentions “Paris”." in next(
        e["html"] for e in events if e["type"] == "cell" and e["id"] == cells[0].pk and e["status"] == "done"
    )
    summary = events[-1]["html"]
    spent = sum(g["prompt_tokens"] + g["completion_tokens"] for g in (first, second))
    assert f'data-judge-tokens="{spent}"' in summary and "50%" in summary


@pytest.mark.needs_local_api
async def test_the_local_judge_scores_one_to_five(live_server, alice, catalog):
    evaluation = await sync_to_async(local_evaluation)(
        alice,
        model="local/chat",
        rubric='Says "Paris" and "France".',
        scale="score",
        answers=("Paris, France", "Paris"),
    )
    _, cells = await run_all(evaluation, alice)
    assert [(c.grades["judge"]["score"], c.grades["judge"]["pass"]) for c in cells] == [(5, True), (3, False)]
    assert cells[1].grades["judge"]["detail"] == "The answer does not mention “France”."


@pytest.mark.needs_local_api
def test_changing_the_rubric_drops_the_old_verdict_and_other_graders_keep_it(alice, catalog):
    evaluation = local_evaluation(alice, model="local/chat", rubric='"Paris"')
    judge = {"rubric": '"Paris"', "model": "local/chat", "scale": "pass"}
    verdict = {"pass": True, "detail": "ok", "of": graders.judge_key(judge)}
    blank_run(evaluation)
    latest_cells(evaluation).update(status=Cell.DONE, output="Paris", grades={"judge": verdict})
    variant = evaluation.variants.get()
    variant.graders = {**variant.graders, "max_length": 100}
    variant.save()
    services.regrade(evaluation, variant)
    assert all(c.grades["judge"] == verdict for c in latest_cells(evaluation))
    variant.graders = {"judge": {**judge, "rubric": '"Lyon"'}}
    variant.save()
    services.regrade(evaluation, variant)
    assert all("judge" not in c.grades for c in latest_cells(evaluation))


def test_the_form_needs_a_model_and_a_rubric_together():
    form = graders.GradersForm({"g-judge_rubric": "Be polite."}, prefix="g", models=["local/chat"])
    assert not form.is_valid()
    assert form.errors["judge_model"] == ["judge model: choose the model that grades against the rubric."]
    form = graders.GradersForm({"g-judge_model": "other/model", "g-judge_rubric": "x"}, prefix="g", models=["a"])
    assert form.errors["judge_model"] == ["judge model: choose a chat model of this connection."]
    form = graders.GradersForm(
        {"g-judge_model": "a", "g-judge_rubric": " Be polite. ", "g-judge_scale": "score"}, prefix="g", models=["a"]
    )
    assert form.is_valid() and form.config() == {"judge": {"rubric": "Be polite.", "model": "a", "scale": "score"}}


def test_a_reply_that_is_no_verdict_fails_in_words():
    judge = {"scale": "score"}
    assert graders.read_verdict(judge, 'Sure! {"score": 4, "reason": "Close."}') == {
        "pass": True,
        "score": 4,
        "detail": "Close.",
    }
    assert graders.read_verdict(judge, '{"score": 9}')["detail"].startswith("the judge gave no score from 1 to 5")
    assert graders.read_verdict({"scale": "pass"}, "I think it passes.") == {
        "pass": False,
        "detail": "the judge's reply is not a verdict: 'I think it passes.'",
    }


def fake_team_evaluation(alice, fake_openai):
    team = Team.objects.create(name="Research")
    Membership.objects.create(team=team, user=alice, role=OWNER)
    connection = fake_connection(alice, fake_openai)
    connection.team = team
    connection.save()
    message, ok = async_to_sync(refresh_models)(connection)
    assert ok, message
    evaluation = services.create(user=alice, title="Judge", connection=connection)
    Variant.objects.filter(evaluation=evaluation).update(model=fake.CHAT_MODEL)
    return with_judge(evaluation, model=fake.TOOLS_MODEL, rubric='Names "Paris".', answers=("Paris",))


async def test_the_fake_providers_judge_is_called_charged_to_the_team_and_its_echo_is_no_verdict(
    live_server, alice, catalog, fake_openai
):
    evaluation = await sync_to_async(fake_team_evaluation)(alice, fake_openai)
    _, cells = await run_all(evaluation, alice)
    assert cells[0].status == "done" and cells[0].output.startswith("Fake provider here.")
    judge = cells[0].grades["judge"]
    assert judge["pass"] is False and judge["detail"].startswith("the judge's reply is not a verdict: 'Fake provider")
    asked = [b for b in fake_openai.state.bodies("/chat/completions") if b["model"] == fake.TOOLS_MODEL]
    assert len(asked) == 1 and asked[0]["messages"][-1]["content"].startswith('Rubric: Names "Paris".')
    assert "<answer>\n" + cells[0].output + "\n</answer>" in asked[0]["messages"][1]["content"]
    records = await sync_to_async(list)(UsageRecord.objects.filter(model=fake.TOOLS_MODEL))
    assert len(records) == 1 and records[0].team_id is not None
    assert records[0].prompt_tokens == judge["prompt_tokens"] > 0
    assert json.dumps(judge)  # stored as JSON in the cell


@pytest.mark.needs_local_api
async def test_a_changed_rubric_is_judged_again_without_asking_the_cells_model_again(live_server, alice, catalog):
    evaluation = await sync_to_async(local_evaluation)(alice, model="local/chat", rubric='Names "Paris".')
    _, before = await run_all(evaluation, alice)
    assert [c.grades["judge"]["pass"] for c in before] == [True, False]

    def change_rubric():
        variant = evaluation.variants.get()
        variant.graders = {"judge": {"rubric": 'Names "Lyon".', "model": "local/chat", "scale": "pass"}}
        variant.save()
        services.regrade(evaluation, variant)

    await sync_to_async(change_rubric)()
    ws = await connect(evaluation.pk, alice)
    events = await run(ws, scope="judge")
    await finished(evaluation.pk)
    await ws.send_json_to({"type": "run", "scope": "judge", "target": 0, "concurrency": 4})
    nothing_left = await ws.receive_json_from(timeout=10)
    await ws.disconnect()
    assert events[0]["judging"] is True and len(events[0]["cells"]) == 2
    after = await sync_to_async(list)(latest_cells(evaluation).order_by("case__position"))
    assert [c.grades["judge"]["pass"] for c in after] == [False, True]
    assert [(c.output, c.runs, c.latency_ms) for c in after] == [(c.output, c.runs, c.latency_ms) for c in before]
    assert nothing_left == {
        "type": "error",
        "message": "judge: every done answer already has a verdict under the present rubric.",
    }
