"""The evaluation's second day: template syntax errors in words, rows with an empty value skipped unless asked,
the run's total time, and columns that follow the template (table, CSV and share)."""

import pytest
from asgiref.sync import sync_to_async

from playground.evaluate import cases, exports, services, templating, testcases
from playground.evaluate import sharing as freeze
from playground.evaluate.models import TestCase
from tests.evaluate.conftest import connect, latest_cells, make_evaluation, receive_until
from tests.evaluate.test_live import finished, run

SAY = "Translate {{text}} into {{language}} [say:{{text}} in {{language}}]"


def test_an_unclosed_brace_is_named_with_its_line_and_column():
    assert templating.syntax_errors("Translate {{text into {{language}}", "user prompt") == [
        "user prompt, line 1, column 11: “{{” is not closed by “}}” (write \\{{ for two literal braces)."
    ]
    assert templating.syntax_errors("ok\n  {{ 2nd }}", "system prompt") == [
        "system prompt, line 2, column 3: “{{2nd}}” is not a variable name (letters, digits and _, starting with a letter)."
    ]
    assert templating.syntax_errors("{{a}} and \\{{ literal", "user prompt") == []


@pytest.mark.django_db
@pytest.mark.needs_local_api
def test_an_unclosed_brace_is_refused_on_the_page_and_not_saved(alice_client, alice, catalog):
    evaluation = make_evaluation(alice)
    page = alice_client.post(f"/evaluate/{evaluation.pk}/prompt/", {"system": "", "user": "Hi {{name"})
    assert page.status_code == 200
    assert "user prompt, line 1, column 4: “{{” is not closed by “}}”" in page.text
    assert evaluation.versions().count() == 1


@pytest.mark.django_db
@pytest.mark.needs_local_api
def test_the_starting_question_column_follows_the_template(alice_client, alice, catalog):
    connection = alice.connections.get(is_local=True)
    evaluation = services.create(user=alice, title="Translate", connection=connection)
    assert evaluation.columns == ["question"]
    services.save_prompt(evaluation, system="", user="Translate {{text}} into {{language}}")
    testcases.import_cases(evaluation, cases.parse("text,language\nGood night,French\n"), append=False)
    evaluation.refresh_from_db()
    assert evaluation.columns == ["text", "language"]
    assert "question" not in exports.export_csv(evaluation).splitlines()[0]
    assert freeze.evaluation_content(evaluation)["columns"] == ["text", "language"]
    page = alice_client.get(f"/evaluate/{evaluation.pk}/?view=editor")
    assert "Row 1 question" not in page.text and "Row 1 text" in page.text

    # Importing first and changing the template after works the same way.
    other = services.create(user=alice, title="Other", connection=connection)
    testcases.import_cases(other, cases.parse("city\nLyon\n"), append=True)
    services.save_prompt(other, system="", user="Where is {{city}}?")
    other.refresh_from_db()
    assert other.columns == ["city"]
    assert [c.values for c in other.cases.all()] == [{}, {"city": "Lyon"}]


@pytest.mark.django_db(transaction=True)
@pytest.mark.needs_local_api
async def test_a_row_with_an_empty_value_is_skipped_unless_the_run_says_to_send_it(live_server, alice, catalog):
    evaluation = await sync_to_async(make_evaluation)(alice, rows=3, user=SAY)

    def prepare():
        rows = list(TestCase.objects.filter(evaluation=evaluation))
        rows[0].values = {"text": "Good morning", "language": "French"}
        rows[1].values = {"text": "Good night", "language": ""}
        rows[2].values = {"text": "", "language": ""}
        TestCase.objects.bulk_update(rows, ["values"])
        return services.gaps(evaluation, ["text", "language"])

    assert await sync_to_async(prepare)() == [(2, ["language"]), (3, ["text", "language"])]
    ws = await connect(evaluation.pk, alice)
    events = await run(ws)
    await finished(evaluation.pk)
    cells = await sync_to_async(list)(latest_cells(evaluation).order_by("case__position"))
    assert [c.status for c in cells] == ["done", "skipped", "skipped"]
    assert cells[0].output == "Good morning in French"
    assert cells[1].error == "Skipped: row 2 has no value for {{language}}."
    assert cells[2].error == "Skipped: row 3 has no value for {{text}}, {{language}}."
    assert events[-1]["type"] == "end" and events[-1]["elapsed_ms"] > 0

    await ws.send_json_to({"type": "run", "scope": "row", "target": cells[1].case_id, "send_empty": True})
    await receive_until(ws, "end")
    await finished(evaluation.pk)
    await ws.disconnect()
    sent = await latest_cells(evaluation).aget(case_id=cells[1].case_id)  # the new run's cell in its place
    assert sent.status == "done" and sent.output == "Good night in "
