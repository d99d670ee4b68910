"""“Add to a dataset” from a chat turn, a shared conversation's turn and an evaluation row: the menu lists the
user's datasets, one click adds the row as a new version (or makes a new dataset); anyone else's turn is a 404;
and an evaluation takes its test cases from a dataset version, recording which."""

import re

import pytest

from playground.chat.models import Conversation, Message
from playground.connections.models import ensure_local_connection
from playground.datasets.models import Dataset, DatasetVersion
from playground.evaluate.models import Evaluation
from playground.sharing.freeze import freeze
from playground.sharing.models import Share
from tests.conftest import client_of
from tests.datasets.conftest import make_dataset
from tests.evaluate.conftest import make_evaluation

pytestmark = pytest.mark.django_db


@pytest.fixture
def turn(alice):
    conversation = Conversation.objects.create(owner=alice, title="Tides", model_id="local/chat")
    Message.objects.create(conversation=conversation, role="user", content="Why two tides, a day?")
    return Message.objects.create(conversation=conversation, role="assistant", content="Two bulges.\nThat's why.")


def test_the_chat_page_offers_add_to_dataset_under_an_answer(alice, turn, catalog):
    page = client_of(alice).get(f"/c/{turn.conversation_id}/").content.decode()
    assert f"/datasets/add/?source=chat-turn&amp;ref={turn.pk}" in page
    thread = re.sub(r'<script id="message-prototypes".*?</script>', "", page, flags=re.S)  # the articles' models
    assert thread.count("Add to dataset") == 1  # under the answer only


def test_the_menu_lists_my_datasets_and_one_click_adds_the_turn(alice, turn):
    dataset = make_dataset(alice)
    client = client_of(alice)
    menu = client.get("/datasets/add/", {"source": "chat-turn", "ref": turn.pk}, HTTP_HX_REQUEST="true")
    assert "Arithmetic" in menu.content.decode() and "+ New dataset" in menu.content.decode()
    done = client.post(
        "/datasets/add/", {"source": "chat-turn", "ref": turn.pk, "dataset": dataset.pk}, HTTP_HX_REQUEST="true"
    )
    assert "as v2 (row 3)" in done.content.decode()
    assert dataset.latest().rows[-1] == {
        "values": {"question": "Why two tides, a day?"},
        "expected": "Two bulges.\nThat's why.",
    }
    assert dataset.latest().message == "Added a row from a chat turn"


def test_new_dataset_from_a_turn_is_named_after_the_conversation(alice, turn):
    client_of(alice).post("/datasets/add/", {"source": "chat-turn", "ref": turn.pk, "dataset": "new"})
    client_of(alice).post("/datasets/add/", {"source": "chat-turn", "ref": turn.pk, "dataset": "new"})
    names = set(Dataset.objects.values_list("name", flat=True))
    assert names == {"Tides", "Tides (2)"}
    version = Dataset.objects.get(name="Tides").latest()
    assert (version.number, version.columns, version.row_count) == (2, ["input"], 1)


def test_someone_elses_turn_or_dataset_is_refused(alice, bob, turn):
    bobs = client_of(bob)
    assert bobs.get("/datasets/add/", {"source": "chat-turn", "ref": turn.pk}).status_code == 404
    assert bobs.post("/datasets/add/", {"source": "chat-turn", "ref": turn.pk, "dataset": "new"}).status_code == 404
    assert bobs.get("/datasets/add/", {"source": "nonsense", "ref": "1"}).status_code == 404
    alices = make_dataset(alice)
    bob_turn = Message.objects.create(
        conversation=Conversation.objects.create(owner=bob, title="b"), role="assistant", content="x"
    )
    page = bobs.post("/datasets/add/", {"source": "chat-turn", "ref": bob_turn.pk, "dataset": alices.pk})
    assert "dataset: that dataset no longer exists (or is not yours); choose another." in page.content.decode()
    assert alices.versions.count() == 1


def test_a_signed_in_viewer_adds_a_shared_turn_to_their_own_dataset(alice, bob, turn):
    share = Share(owner=alice, kind="conversation", title="Tides", visibility=Share.SIGNED_IN)
    share.source = turn.conversation
    share.save()
    freeze(share)
    page = client_of(bob).get(f"/s/{share.token}/").content.decode()
    ref = f"{share.token}:{turn.pk}"
    assert f"source=shared-turn&amp;ref={share.token}%3A{turn.pk}" in page
    client_of(bob).post("/datasets/add/", {"source": "shared-turn", "ref": ref, "dataset": "new"})
    version = Dataset.objects.get(owner=bob).latest()
    assert version.rows == [{"values": {"input": "Why two tides, a day?"}, "expected": "Two bulges.\nThat's why."}]
    share.delete()
    assert client_of(bob).get("/datasets/add/", {"source": "shared-turn", "ref": ref}).status_code == 404


def test_an_evaluation_row_goes_to_a_dataset_with_its_values(alice, bob, catalog):
    ensure_local_connection(alice)
    evaluation = make_evaluation(alice, rows=2)
    case = evaluation.cases.first()
    page = client_of(alice).get(f"/evaluate/{evaluation.pk}/").content.decode()
    assert f"source=evaluation-row&amp;ref={case.pk}" in page
    dataset = make_dataset(alice)
    client_of(alice).post("/datasets/add/", {"source": "evaluation-row", "ref": case.pk, "dataset": dataset.pk})
    assert dataset.latest().rows[-1] == {"values": {"question": "q1"}, "expected": "a1"}
    assert client_of(bob).get("/datasets/add/", {"source": "evaluation-row", "ref": case.pk}).status_code == 404


def test_an_evaluation_uses_a_dataset_version_and_records_it(alice, bob, catalog):
    ensure_local_connection(alice)
    evaluation = make_evaluation(alice, rows=1)
    dataset = make_dataset(alice)
    version = dataset.latest()
    client = client_of(alice)
    client.post(f"/evaluate/{evaluation.pk}/dataset/", {"version": version.pk})
    evaluation.refresh_from_db()
    assert evaluation.dataset_version == version
    assert [(c.values, c.expected) for c in evaluation.cases.all()] == [
        ({"question": "2+2?"}, "4"),
        ({"question": "Capital of France?"}, "Paris"),
    ]
    assert evaluation.latest_run() is None  # cells are a run's: none until it runs
    page = client.get(f"/evaluate/{evaluation.pk}/?view=editor").content.decode()
    assert "Test cases from" in page and "Arithmetic@v1" in page
    # Bob's version, or one whose dataset was deleted, no longer exists for alice: words, nothing changed.
    bobs = make_dataset(bob, "Bob's").latest()
    response = client.post(f"/evaluate/{evaluation.pk}/dataset/", {"version": bobs.pk}, follow=True)
    assert (
        "dataset: that dataset version no longer exists (or is not yours); choose another." in response.content.decode()
    )
    dataset.delete()
    evaluation.refresh_from_db()
    assert evaluation.dataset_version is None and evaluation.cases.count() == 2


def test_a_version_over_the_evaluation_limit_is_refused_in_words(alice, catalog):
    ensure_local_connection(alice)
    evaluation = make_evaluation(alice, rows=1)
    rows = [{"values": {"question": str(i)}, "expected": ""} for i in range(1001)]
    version = make_dataset(alice, rows=rows).latest()
    response = client_of(alice).post(f"/evaluate/{evaluation.pk}/dataset/", {"version": version.pk}, follow=True)
    assert "dataset: Arithmetic@v1 has 1,001 rows; an evaluation takes at most 1,000 test cases." in (
        response.content.decode()
    )
    assert Evaluation.objects.get(pk=evaluation.pk).dataset_version is None
    assert DatasetVersion.objects.count() == 1


def test_a_run_records_the_dataset_version_until_the_cases_are_edited(alice, catalog):
    from playground.evaluate import runs, testcases

    ensure_local_connection(alice)
    evaluation = make_evaluation(alice, rows=1)
    version = make_dataset(alice).latest()
    client = client_of(alice)
    client.post(f"/evaluate/{evaluation.pk}/dataset/", {"version": version.pk})
    evaluation.refresh_from_db()
    first, _ = runs.begin(evaluation, user=alice)
    assert first.dataset_version == version
    page = client.get(f"/evaluate/{evaluation.pk}/runs/{first.number}/").content.decode()
    assert "test cases from" in page and f"/datasets/{version.dataset_id}/?v=1" in page and "Arithmetic@v1" in page

    # A saved edit that changes nothing keeps it; a changed value, an added or a deleted row forgets it.
    case = evaluation.cases.first()
    assert testcases.save_typed_cases(evaluation, {f"case-{case.pk}-question": case.values["question"]}) == []
    assert Evaluation.objects.get(pk=evaluation.pk).dataset_version == version
    assert testcases.save_typed_cases(evaluation, {f"case-{case.pk}-question": "3+3?"}) == []
    evaluation.refresh_from_db()
    assert evaluation.dataset_version is None
    second, _ = runs.begin(evaluation, user=alice)
    assert second.dataset_version is None
    assert "test cases from" not in client.get(f"/evaluate/{evaluation.pk}/runs/{second.number}/").content.decode()

    for change in (lambda: testcases.add_case(evaluation), lambda: client.post(delete_url(evaluation))):
        client.post(f"/evaluate/{evaluation.pk}/dataset/", {"version": version.pk})
        evaluation.refresh_from_db()
        assert evaluation.dataset_version == version
        change()
        assert Evaluation.objects.get(pk=evaluation.pk).dataset_version is None


def delete_url(evaluation) -> str:
    return f"/evaluate/{evaluation.pk}/cases/{evaluation.cases.order_by('-position').first().pk}/delete/"
