"""A team's evaluation: alice owns it (she edits and runs it on her connection), bob is in its team (he sees it,
its runs and their comparison, exports them and rates answers, each person's rating kept with who and when),
carol is in no team of alice's (every page and action of it is a 404 to her)."""

import asyncio
import json

import pytest
from channels.testing import WebsocketCommunicator

from playground.asgi import application
from playground.datasets import services as datasets
from playground.evaluate import ratings
from playground.evaluate.dataset_views import use_version
from playground.evaluate.models import Evaluation, Rating
from playground.teams.models import Membership, Team
from tests.conftest import client_of
from tests.evaluate.conftest import ORIGIN, blank_run, connect, make_evaluation
from tests.evaluate.test_runs import fill, grade

pytestmark = pytest.mark.django_db


def team_evaluation(alice, team):
    """Alice's evaluation in her team, run twice: row 1 improved, row 2 regressed, row 3 failed in run 2."""
    evaluation = make_evaluation(alice, rows=3, variants=1)
    Evaluation.objects.filter(pk=evaluation.pk).update(team=team)
    first, second = blank_run(evaluation), blank_run(evaluation)
    fill(
        first,
        {(1, "A"): "Paris", (2, "A"): "Lyon", (3, "A"): "Rome"},
        {(1, "A"): {"exact": grade(False)}, (2, "A"): {"exact": grade(True)}, (3, "A"): {"exact": grade(True)}},
    )
    fill(
        second,
        {(1, "A"): "Paris, France", (2, "A"): "Nice"},
        {(1, "A"): {"exact": grade(True)}, (2, "A"): {"exact": grade(False)}},
    )
    return Evaluation.objects.get(pk=evaluation.pk)


def test_the_create_form_offers_the_users_teams_and_the_list_shows_a_teams_evaluations(alice, bob, team, catalog):
    alice_client = client_of(alice)
    connection = make_evaluation(alice).connection
    made = alice_client.post("/evaluate/new/", {"title": "Shared one", "connection": connection.pk, "team": team.pk})
    assert made.status_code == 302
    created = Evaluation.objects.get(title="Shared one")
    assert (created.owner, created.team) == (alice, team)
    listed = client_of(bob).get("/evaluate/").text
    assert "Shared one" in listed and "team Acme" in listed and "by alice" in listed
    other = Team.objects.create(name="Elsewhere")
    refused = alice_client.post("/evaluate/new/", {"title": "Sneaky", "connection": connection.pk, "team": other.pk})
    assert "team: choose one of your teams." in refused.text
    assert not Evaluation.objects.filter(title="Sneaky").exists()


def test_a_team_member_sees_compares_exports_and_rates_but_does_not_edit_or_run(alice, bob, team, catalog):
    evaluation = team_evaluation(alice, team)
    bob_client, base = client_of(bob), f"/evaluate/{evaluation.pk}"
    page = bob_client.get(f"{base}/").text
    assert 'id="member-note"' in page and "Paris, France" in page
    assert 'data-run="all"' not in page and "Delete this evaluation" not in page and "?view=editor" not in page
    assert 'data-run="all"' in client_of(alice).get(f"{base}/").text
    assert bob_client.get(f"{base}/runs/2/").status_code == 200
    assert "run 2 vs run 1: 1 improved, 1 regressed, 1 failed" in bob_client.get(f"{base}/compare/?a=1&b=2").text
    assert b"Paris, France" in bob_client.get(f"{base}/export.csv").content
    # Edits and runs are its owner's: a member is told so (403), and nothing changes.
    edit = bob_client.post(f"{base}/prompt/", {"system": "", "user": "Changed {{question}}"})
    assert edit.status_code == 403 and b"Only its owner, alice, edits and runs this evaluation" in edit.content
    assert bob_client.post(f"{base}/delete/").status_code == 403
    assert bob_client.post(f"{base}/batch/").status_code == 403
    assert Evaluation.objects.filter(pk=evaluation.pk).exists()
    assert evaluation.latest_prompt().template == "{{question}}"


def test_each_members_rating_is_kept_with_who_and_when_and_the_judge_is_measured_against_each(
    alice, bob, team, catalog
):
    evaluation = team_evaluation(alice, team)
    run = evaluation.runs.get(number=2)
    cell = run.cells.get(case__position=0)  # the grader passed it
    url = f"/evaluate/{evaluation.pk}/cells/{cell.pk}/rate/"
    assert client_of(alice).post(url, {"verdict": "pass", "score": "5", "comment": "right"}).status_code == 302
    shown = client_of(bob).post(url, {"verdict": "fail", "score": "2", "comment": "no country"}, HTTP_HX_REQUEST="true")
    assert 'data-rating-by="alice"' in shown.text and "no country" in shown.text
    assert 'class="linklike small rerun"' not in shown.text  # a member's cell has no run button
    mine = {r.rater.username: (r.passed, r.score, r.comment) for r in Rating.objects.filter(cell=cell)}
    assert mine == {"alice": (True, 5, "right"), "bob": (False, 2, "no country")}
    (exact,) = ratings.agreement(run)
    assert exact[0] == "exact" and (exact[1].n, exact[1].agreed) == (2, 1)  # one pair per person
    page = client_of(bob).get(f"/evaluate/{evaluation.pk}/runs/2/").text
    assert 'data-rater="alice"' in page and 'data-rater="bob"' in page and "2 ratings" in page
    assert page.count("data-rating-row=") == 2 and "no country" in page and "<time datetime=" in page
    assert "an answer rated by several people counts once for each of them (three raters" in page
    assert ratings.raters(run) == [("alice", 1), ("bob", 1)]
    exported = client_of(bob).get(f"/evaluate/{evaluation.pk}/export.jsonl?run=2").text
    first = json.loads(exported.splitlines()[0])
    assert {r["rater"] for r in first["results"]["A"]["ratings"]} == {"alice", "bob"}


def test_an_outsider_gets_404_everywhere(alice, bob, team, carol, catalog):
    evaluation = team_evaluation(alice, team)
    cell = evaluation.runs.get(number=2).cells.first()
    carol_client, base = client_of(carol), f"/evaluate/{evaluation.pk}"
    for url in (
        f"{base}/",
        f"{base}/runs/2/",
        f"{base}/compare/?a=1&b=2",
        f"{base}/export.csv",
        f"{base}/export.jsonl",
        f"{base}/compare/export.csv?a=1&b=2",
        f"{base}/compare/export.jsonl?a=1&b=2",
    ):
        assert carol_client.get(url).status_code == 404, url
    assert carol_client.post(f"{base}/cells/{cell.pk}/rate/", {"verdict": "pass"}).status_code == 404
    assert carol_client.post(f"{base}/compare/share/", {"a": "1", "b": "2"}).status_code == 404
    assert carol_client.post(f"{base}/prompt/", {"user": "x"}).status_code == 404
    assert not Rating.objects.exists()
    assert "Capitals" not in carol_client.get("/evaluate/").text

    # Leaving the team is leaving its evaluations.
    Membership.objects.filter(user=bob).delete()
    assert client_of(bob).get(f"{base}/runs/2/").status_code == 404


def test_runs_of_different_dataset_versions_compare_on_the_rows_they_share_and_say_so(alice, catalog):
    evaluation = make_evaluation(alice, rows=1)
    rows = [{"values": {"question": f"q{n}"}, "expected": f"a{n}"} for n in (1, 2, 3)]
    dataset, v1 = datasets.create(user=alice, team=None, name="Qs", columns=["question"], rows=rows)
    use_version(evaluation, v1)
    first = blank_run(evaluation)
    fill(first, {(1, "A"): "a1", (2, "A"): "a2", (3, "A"): "a3"})
    changed = [rows[0], rows[2], {"values": {"question": "q4"}, "expected": ""}]
    v2 = datasets.save_version(dataset, columns=["question"], rows=changed, author=alice)
    use_version(evaluation, v2)
    second = blank_run(evaluation)
    fill(second, {(1, "A"): "a1", (2, "A"): "a3!", (3, "A"): "a4"})
    # Every answer of run 1 is still there: to the rows v2 kept, and to v1's q2, which left the table (retired).
    assert first.cells.count() == 3
    page = client_of(alice).get(f"/evaluate/{evaluation.pk}/compare/?a=1&b=2").text
    assert "run 2 vs run 1: 1 changed, 1 unchanged" in page
    assert "only the rows they share are compared; 1 row only in run 1; 1 row only in run 2." in page
    assert page.count('class="pair"') == 2


@pytest.mark.django_db(transaction=True)
def test_over_the_websocket_a_member_may_not_run_and_an_outsider_may_not_connect(alice, bob, team, carol, catalog):
    evaluation = team_evaluation(alice, team)

    async def sockets():
        member = await connect(evaluation.pk, bob)
        await member.send_json_to({"type": "run", "scope": "all", "concurrency": 1})
        said = await member.receive_json_from(timeout=10)
        await member.disconnect()
        outsider = WebsocketCommunicator(application, f"/ws/evaluate/{evaluation.pk}/", headers=ORIGIN)
        outsider.scope["user"] = carol
        await outsider.connect()
        closed = await outsider.receive_output(timeout=5)
        await outsider.disconnect()
        return said, closed

    said, closed = asyncio.run(sockets())
    assert said["type"] == "error" and "Only this evaluation's owner runs and stops it" in said["message"]
    assert closed == {"type": "websocket.close", "code": 4404}
    assert evaluation.runs.count() == 2
