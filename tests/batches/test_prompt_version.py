"""A batch made from a library prompt version and rows of variables (CSV or JSON lines): one request per row,
compiled by prompts' own compiler, and the batch records the version it used. Bad rows are refused by row and
variable and send nothing; a version the user cannot use is refused."""

import json

import httpx
import pytest

from playground.batches.models import TERMINAL, Batch
from playground.batches.variables import parse_rows
from playground.teams.models import MEMBER, OWNER, Membership, Team
from tests.batches.conftest import HTMX, local_connection, wait_for_status
from tests.prompts.conftest import make_prompt

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]
TEMPLATE = "Summarise {{topic}} in {{n}} words."


def form(connection, version, variables: str, **fields) -> dict:
    return {
        "connection": str(connection.pk),
        "source": "version",
        "model": "",
        "version": str(version.pk),
        "variables": variables,
        "completion_window": "24h",
        "metadata_key": [""],
        "metadata_value": [""],
        **fields,
    }


def test_a_batch_from_a_team_prompts_version_and_csv_rows_records_the_version(
    alice_http, alice, bob, catalog, live_server
):
    team = Team.objects.create(name="Acme")
    Membership.objects.create(team=team, user=alice, role=MEMBER)
    Membership.objects.create(team=team, user=bob, role=OWNER)
    prompt = make_prompt(bob, name="summary", team=team, versions=2, template=TEMPLATE)
    version = prompt.latest()
    connection = local_connection(alice)
    page = alice_http.post(
        "/batches/new/", data=form(connection, version, 'topic,n\nrivers,20\n"tides, moons",5\n'), headers=HTMX
    )
    assert "created with 2 requests" in page.text, page.text[:3000]
    batch = Batch.objects.get(owner=alice)
    assert batch.prompt_version == version and batch.input_filename == "summary-v2.jsonl"
    assert f'data-version="{version.pk}">from summary@v2<' in page.text
    sent = httpx.get(
        f"{live_server.api_url}/files/{batch.input_file_id}/content",
        headers={"Authorization": f"Bearer {connection.get_key()}"},
    )
    lines = [json.loads(raw) for raw in sent.text.splitlines()]
    assert [line["custom_id"] for line in lines] == ["row-1", "row-2"]
    assert lines[1]["body"]["model"] == "local/chat"  # the version's model: none was chosen
    assert lines[1]["body"]["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Summarise tides, moons in 5 words."},
    ]
    assert 'data-status="completed"' in wait_for_status(alice_http, batch.pk, TERMINAL)


def test_json_lines_rows_and_bad_rows_named_by_row_and_variable(alice_http, alice, bob, catalog):
    version = make_prompt(alice, template=TEMPLATE).latest()
    connection = local_connection(alice)
    rows = '{"topic": "rivers", "n": 20}\n{"topic": "lakes"}\n{"topic": "x", "n": 1, "colour": "red"}\n'
    page = alice_http.post("/batches/new/", data=form(connection, version, rows), headers=HTMX).text
    assert "variables, row 2: variables: n has no value." in page
    assert "variables, row 3: variables.colour: the template has no {{colour}}." in page.replace("&#x27;", "'")
    assert not Batch.objects.exists()

    good = alice_http.post(
        "/batches/new/", data=form(connection, version, '{"topic": "rivers", "n": 20}\n'), headers=HTMX
    )
    assert "created with 1 request" in good.text
    assert Batch.objects.get(owner=alice).prompt_version == version

    others = make_prompt(bob, name="bob's", template=TEMPLATE).latest()
    refused = alice_http.post("/batches/new/", data=form(connection, others, "topic,n\na,1\n"), headers=HTMX).text
    assert "version: choose a version of a prompt you can use." in refused
    assert Batch.objects.count() == 1


def test_rows_parse_from_csv_or_json_lines_and_bad_ones_are_named():
    assert parse_rows("a,b\n1,2\n") == ([{"a": "1", "b": "2"}], [])
    assert parse_rows('{"a": 1}\n\n{"a": 2}') == ([{"a": 1}, {"a": 2}], [])
    assert parse_rows("a,b\n1\n")[1] == ["variables, line 2: 1 values for 2 columns."]
    assert parse_rows('{"a": 1}\n[1]')[1] == ["variables, line 2: expected an object of variables."]
    assert parse_rows("")[1] == ["variables: write at least one row (CSV with a header row, or JSON lines)."]
