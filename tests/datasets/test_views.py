"""The dataset pages: the list, the grid (edit, add, delete, save = a new version), history, restore, import and
export; another user's dataset is a 404, a team member edits, only admins delete, forms need their CSRF token, and
every bad input gets words and saves nothing."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from playground.datasets import tabular, views
from playground.datasets.models import Dataset, DatasetVersion
from tests.conftest import client_of
from tests.datasets.conftest import make_dataset

pytestmark = pytest.mark.django_db


def upload(name: str, body: bytes) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, body, content_type="application/octet-stream")


def test_the_list_shows_mine_and_my_teams(alice, bob, team):
    make_dataset(alice, "Alice's own")
    make_dataset(alice, "The team's", team=team)
    page = client_of(bob).get("/datasets/").content.decode()
    assert "The team&#x27;s" in page and "Alice&#x27;s own" not in page
    assert "v1</span>" in page and "2 rows" in page


def test_create_makes_v1_and_a_taken_name_says_so(alice):
    client = client_of(alice)
    response = client.post("/datasets/new/", {"name": "Fresh"})
    dataset = Dataset.objects.get(name="Fresh")
    assert response.url == f"/datasets/{dataset.pk}/"
    assert dataset.latest().columns == ["input"]
    page = client.post("/datasets/new/", {"name": "Fresh"}).content.decode()
    assert "name: “Fresh” is already a dataset in your datasets; choose another name." in page
    assert Dataset.objects.count() == 1


def test_another_users_dataset_is_a_404_everywhere(alice, carol):
    dataset = make_dataset(alice)
    client = client_of(carol)
    pk = dataset.pk
    for url in (f"/datasets/{pk}/", f"/datasets/{pk}/versions/", f"/datasets/{pk}/v1/export.csv"):
        assert client.get(url).status_code == 404, url
    for url in (f"/datasets/{pk}/save/", f"/datasets/{pk}/v1/restore/", f"/datasets/{pk}/delete/"):
        assert client.post(url, {"base": "1", "c-0-question": "x"}).status_code == 404, url
    assert client.post(f"/datasets/{pk}/import/", {"file": upload("a.csv", b"q\n1\n")}).status_code == 404
    assert dataset.versions.count() == 1


def test_editing_cells_adding_and_deleting_rows_saves_a_new_version(alice):
    dataset = make_dataset(alice)
    page = client_of(alice).get(f"/datasets/{dataset.pk}/").content.decode()
    assert 'name="c-0-question"' in page and 'name="n-0-question"' in page
    response = client_of(alice).post(
        f"/datasets/{dataset.pk}/save/",
        {
            "base": "1",
            "c-0-question": "2+2, really?",
            "e-0": "four",
            "d-1": "on",
            "n-0-question": "New one",
            "n-0-expected": "fresh",
            "n-1-question": "",
            "new_column": "topic",
            "message": "fixed row 1",
        },
    )
    assert response.status_code == 302
    latest = dataset.latest()
    assert (latest.number, latest.message, latest.columns) == (2, "fixed row 1", ["question", "topic"])
    assert latest.rows == [
        {"values": {"question": "2+2, really?", "topic": ""}, "expected": "four"},
        {"values": {"question": "New one", "topic": ""}, "expected": "fresh"},
    ]
    assert dataset.versions.get(number=1).rows[0]["expected"] == "4"  # v1 unchanged


def test_saving_over_an_old_version_saves_nothing_and_says_why(alice):
    dataset = make_dataset(alice)
    client = client_of(alice)
    client.post(f"/datasets/{dataset.pk}/save/", {"base": "1", "e-0": "four"})
    page = client.post(f"/datasets/{dataset.pk}/save/", {"base": "1", "e-0": "FOUR"}).content.decode()
    assert "v1 is not the latest version any more: v2 was saved since. Nothing was saved" in page
    assert dataset.versions.count() == 2


def test_a_cell_over_the_limit_names_row_and_column(alice):
    dataset = make_dataset(alice)
    too_long = "x" * (tabular.MAX_VALUE + 1)
    page = client_of(alice).post(f"/datasets/{dataset.pk}/save/", {"base": "1", "c-1-question": too_long})
    assert "row 2, column question: 20,001 characters; the limit is 20,000." in page.content.decode()
    assert dataset.versions.count() == 1


def test_history_view_of_an_old_version_and_restore(alice):
    dataset = make_dataset(alice)
    client = client_of(alice)
    client.post(f"/datasets/{dataset.pk}/save/", {"base": "1", "d-0": "on", "message": "drop"})
    history = client.get(f"/datasets/{dataset.pk}/versions/").content.decode()
    assert "drop" in history and "Restore as new version" in history
    old = client.get(f"/datasets/{dataset.pk}/?v=1").content.decode()
    assert "You are looking at v1" in old and "2+2?" in old and 'name="c-0-question"' not in old
    client.post(f"/datasets/{dataset.pk}/v1/restore/")
    latest = dataset.latest()
    assert (latest.number, latest.restored_from, latest.row_count) == (3, 1, 2)


def test_a_version_that_no_longer_exists_is_said_in_words(alice):
    dataset = make_dataset(alice)
    client = client_of(alice)
    response = client.get(f"/datasets/{dataset.pk}/?v=9")
    assert response.status_code == 404
    assert "Arithmetic has no version v9 (any more). Showing the latest, v1." in response.content.decode()
    response = client.get(f"/datasets/{dataset.pk}/v9/export.jsonl")
    assert response.status_code == 404
    assert response.content.decode() == "Arithmetic has no version v9 (any more). Nothing to export."


def test_a_team_member_edits_but_only_admins_delete(alice, bob, team):
    dataset = make_dataset(alice, team=team)
    bob_client = client_of(bob)
    assert bob_client.post(f"/datasets/{dataset.pk}/save/", {"base": "1", "e-0": "four"}).status_code == 302
    assert dataset.latest().author == bob
    bob_client.post(f"/datasets/{dataset.pk}/delete/")
    assert Dataset.objects.filter(pk=dataset.pk).exists()
    client_of(alice).post(f"/datasets/{dataset.pk}/delete/")
    assert not Dataset.objects.filter(pk=dataset.pk).exists()


def test_forms_need_their_csrf_token(alice):
    dataset = make_dataset(alice)
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    assert client.post("/datasets/new/", {"name": "x"}).status_code == 403
    assert client.post(f"/datasets/{dataset.pk}/save/", {"base": "1", "e-0": "x"}).status_code == 403
    assert client.post("/datasets/add/", {"source": "chat-turn", "ref": "1", "dataset": "new"}).status_code == 403
    assert dataset.versions.count() == 1


def test_import_a_csv_as_a_new_dataset_and_a_jsonl_as_a_new_version(alice):
    client = client_of(alice)
    body = 'question,expected\n"Grüße, ""friend""","multi\nline"\n'.encode()
    response = client.post("/datasets/import/", {"file": upload("greetings.csv", body)})
    dataset = Dataset.objects.get(name="greetings")
    assert response.url == f"/datasets/{dataset.pk}/"
    assert dataset.latest().rows == [{"values": {"question": 'Grüße, "friend"'}, "expected": "multi\nline"}]
    jsonl = b'{"question": "a", "expected": "b"}\n{"question": "c", "expected": "d"}\n'
    client.post(f"/datasets/{dataset.pk}/import/", {"file": upload("more.jsonl", jsonl), "message": "from JSONL"})
    latest = dataset.latest()
    assert (latest.number, latest.row_count, latest.message) == (2, 2, "from JSONL")


def test_export_csv_and_jsonl_of_any_version(alice):
    dataset = make_dataset(alice)
    client = client_of(alice)
    response = client.get(f"/datasets/{dataset.pk}/v1/export.csv")
    assert response["Content-Disposition"] == 'attachment; filename="Arithmetic-v1.csv"'
    assert response.content.decode() == "question,expected\r\n2+2?,4\r\nCapital of France?,Paris\r\n"
    response = client.get(f"/datasets/{dataset.pk}/v1/export.jsonl")
    assert response.content.decode().splitlines()[0] == '{"question": "2+2?", "expected": "4"}'


@pytest.mark.parametrize(
    ("name", "body", "words"),
    [
        ("a.csv", b"", "file: the file is empty."),
        (
            "a.csv",
            b"q,expected\n1,2\n3\n",
            "row 2: no value for column “expected” (1 value for 2 columns: q, expected).",
        ),
        (
            "a.jsonl",
            b'{"q": "1"}\n{"q": 2\n',
            "line 2: not valid JSON (Expecting &#x27;,&#x27; delimiter at column 8).",
        ),
        ("a.jsonl", b'{"q": "1"}\n{"r": "2"}\n', "line 2: column “r” is not in the first line&#x27;s columns (q)."),
    ],
)
def test_bad_files_get_words_and_save_nothing(alice, name, body, words):
    dataset = make_dataset(alice)
    client = client_of(alice)
    page = client.post("/datasets/import/", {"file": upload(name, body)}).content.decode()
    assert words in page and "Nothing was saved." in page
    page = client.post(f"/datasets/{dataset.pk}/import/", {"file": upload(name, body)}).content.decode()
    assert words in page
    assert Dataset.objects.count() == 1 and DatasetVersion.objects.count() == 1


def test_too_many_rows_is_refused_naming_the_limit(alice, monkeypatch):
    monkeypatch.setattr(tabular, "MAX_ROWS", 2)
    page = client_of(alice).post("/datasets/import/", {"file": upload("a.csv", b"q\n1\n2\n3\n")}).content.decode()
    assert "file: 3 rows; the limit is 2 rows per version." in page
    assert not Dataset.objects.exists()


def test_a_100_mb_import_is_refused_by_its_length_before_its_file_is_looked_at(alice, rf):
    request = rf.post("/datasets/import/", {"file": upload("huge.csv", b"q\n1\n")})
    request.META["CONTENT_LENGTH"] = str(100 * 1024 * 1024)
    request.user = alice
    page = views.import_new(request).content.decode()
    assert "file: 100 MB; the limit is 20 MB per import. Nothing was imported." in page
    assert not Dataset.objects.exists()


def test_a_file_over_the_limit_is_refused_by_its_size_too(alice, monkeypatch):
    monkeypatch.setattr(tabular, "MAX_IMPORT_BYTES", 1024)
    page = client_of(alice).post("/datasets/import/", {"file": upload("a.csv", b"q\n" + b"x" * 2000)})
    assert "file: 2,002 bytes; the limit is 1,024 bytes per import. Nothing was imported." in page.content.decode()
    assert not Dataset.objects.exists()
