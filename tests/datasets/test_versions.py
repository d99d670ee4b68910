"""Datasets and their versions: immutable, numbered, restored as new versions, owned by a user or a team; and the
CSV/JSONL round trip of the one parser the import view uses."""

import pytest

from playground.datasets import services, tabular
from playground.datasets.models import Dataset, DatasetVersion, ImmutableVersion
from tests.datasets.conftest import ROWS, make_dataset

pytestmark = pytest.mark.django_db

NASTY = [
    {"values": {"question": 'Grüße, “quoted” and "double"', "context": "a,b,c"}, "expected": "line one\nline two"},
    {"values": {"question": "emoji 🧪 and tab\there", "context": ""}, "expected": "carriage\r\nreturn, comma"},
    {"values": {"question": "'single' ; semi", "context": "日本語のテキスト"}, "expected": ""},
]


def test_a_version_is_never_changed_or_deleted_in_place(alice):
    version = make_dataset(alice).latest()
    version.message = "changed"
    with pytest.raises(ImmutableVersion):
        version.save()
    with pytest.raises(ImmutableVersion):
        DatasetVersion.objects.filter(pk=version.pk).update(message="x")
    with pytest.raises(ImmutableVersion):
        version.delete()
    assert DatasetVersion.objects.get(pk=version.pk).message == "Created"


def test_each_save_is_the_next_version_and_restore_makes_a_new_one(alice):
    dataset = make_dataset(alice)
    v2 = services.save_version(dataset, columns=["question"], rows=ROWS[:1], author=alice, message="trim")
    assert (v2.number, v2.row_count, v2.message) == (2, 1, "trim")
    v3 = services.restore(dataset, dataset.versions.get(number=1), alice)
    assert (v3.number, v3.restored_from, v3.rows) == (3, 1, ROWS)
    assert list(dataset.versions.values_list("number", "row_count")) == [(3, 2), (2, 1), (1, 2)]


def test_a_row_from_elsewhere_goes_to_the_first_column_and_makes_a_version(alice):
    dataset = make_dataset(alice)
    version = services.add_row(dataset, values={"input": "3+3?"}, expected="6", author=alice, origin="a chat turn")
    assert version.number == 2
    assert version.rows[-1] == {"values": {"question": "3+3?"}, "expected": "6"}
    assert version.message == "Added a row from a chat turn"


def test_a_row_with_new_columns_adds_them_empty_to_the_other_rows(alice):
    dataset = make_dataset(alice)
    version = services.add_row(
        dataset, values={"question": "q", "topic": "t"}, expected="e", author=alice, origin="an evaluation row"
    )
    assert version.columns == ["question", "topic"]
    assert version.rows[-1]["values"] == {"question": "q", "topic": "t"}


def test_names_are_unique_per_owner_not_across_owners(alice, bob, team):
    make_dataset(alice, "Shared name")
    with pytest.raises(services.DatasetError, match="already a dataset in your datasets"):
        make_dataset(alice, "Shared name")
    make_dataset(bob, "Shared name")
    make_dataset(alice, "Shared name", team=team)
    with pytest.raises(services.DatasetError, match="already a dataset in the datasets of Acme"):
        make_dataset(bob, "Shared name", team=team)


def test_team_members_see_team_datasets_and_editors_are_not_admins(alice, bob, carol, team):
    mine = make_dataset(alice, "Mine")
    theirs = make_dataset(alice, "Team's", team=team)
    assert set(Dataset.objects.for_user(bob)) == {theirs}
    assert set(Dataset.objects.for_user(alice)) == {mine, theirs}
    assert not Dataset.objects.for_user(carol).exists()
    assert (theirs.role_of(alice), theirs.role_of(bob), theirs.role_of(carol)) == ("admin", "editor", "")
    assert mine.role_of(bob) == ""


@pytest.mark.parametrize("kind", ["csv", "jsonl"])
def test_export_then_import_gives_the_same_rows(kind):
    columns = ["question", "context"]
    text = tabular.to_csv(columns, NASTY) if kind == "csv" else tabular.to_jsonl(columns, NASTY)
    parsed = tabular.parse(text.encode("utf-8"), kind)
    assert parsed.errors == []
    assert parsed.columns == columns
    assert parsed.rows == NASTY


def test_a_csv_with_a_bom_and_an_expected_column_in_any_case():
    parsed = tabular.parse("\ufeffquestion,Expected\nhi,there\n".encode(), "csv")
    assert (parsed.columns, parsed.rows) == (["question"], [{"values": {"question": "hi"}, "expected": "there"}])


def test_mismatched_csv_rows_are_named_by_row_and_column():
    parsed = tabular.parse(b"question,context,expected\na,b,c\nd,e\nf,g,h,i\n", "csv")
    assert parsed.errors == [
        "row 2: no value for column “expected” (2 values for 3 columns: question, context, expected).",
        "row 3: 4 values for 3 columns (question, context, expected); value 4 has no column.",
    ]


def test_mismatched_jsonl_lines_are_named_by_line_and_column():
    text = '{"question": "a", "expected": "b"}\n{"question": "c"}\n{"question": "d", "expected": "e", "extra": 1}\n'
    parsed = tabular.parse(text.encode(), "jsonl")
    assert parsed.errors == [
        "line 2: no value for column “expected” (the first line has question, expected).",
        "line 3: column “extra” is not in the first line's columns (question, expected).",
    ]


def test_malformed_jsonl_names_its_line():
    parsed = tabular.parse(b'{"question": "a"}\n\n{"question": "b",\n', "jsonl")
    assert parsed.errors == ["line 3: not valid JSON (Expecting property name enclosed in double quotes at column 18)."]


def test_empty_files_and_header_only_files_are_refused_in_words():
    assert tabular.parse(b"", "csv").errors == ["file: the file is empty."]
    assert tabular.parse(b"  \n\n", "jsonl").errors == ["file: the file is empty."]
    assert tabular.parse(b"question,expected\n", "csv").errors == [
        "file: no rows (a CSV needs a header row and at least one row below it)."
    ]


def test_too_many_rows_names_the_limit(monkeypatch):
    monkeypatch.setattr(tabular, "MAX_ROWS", 3)
    parsed = tabular.parse(b"q\n1\n2\n3\n4\n", "csv")
    assert parsed.errors == ["file: 4 rows; the limit is 3 rows per version."]


def test_bad_column_names_and_non_utf8_are_refused():
    assert tabular.parse(b"my question,expected\na,b\n", "csv").errors == [
        "header, column 1: “my question” is not a variable name (letters, digits and _)."
    ]
    assert tabular.parse(b"q\n\xff\n", "csv").errors == ["file: not UTF-8 text (byte 3 is not valid UTF-8)."]


def test_ten_thousand_rows_are_one_version_row(alice, django_assert_max_num_queries):
    rows = [{"values": {"question": f"q{i}"}, "expected": f"a{i}"} for i in range(10_000)]
    dataset = make_dataset(alice, rows=rows[:1])
    with django_assert_max_num_queries(5):
        version = services.save_version(dataset, columns=["question"], rows=rows, author=alice)
    assert DatasetVersion.objects.get(pk=version.pk).row_count == 10_000
