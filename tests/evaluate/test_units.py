"""Templates, test-case parsing and graders, without a server."""

import time

from playground.evaluate import cases, graders, templating


def test_variables_are_listed_once_in_order_and_escaped_braces_are_not_variables():
    text = "Hi {{ name }}, about {{topic}} and {{name}}; literal \\{{name}} stays"
    assert templating.variables("{{sys}}", text) == ["sys", "name", "topic"]
    kinds = [kind for kind, _ in templating.segments(text)]
    assert kinds.count("var") == 3 and kinds.count("escape") == 1


def test_render_fills_values_reports_missing_ones_and_writes_literal_braces():
    rendered, missing = templating.render("{{a}} + {{ b }} = {{c}} \\{{a}}", {"a": "1", "b": 2})
    assert rendered == "1 + 2 = {{c}} {{a}}"
    assert missing == ["c"]


def test_csv_with_expected_column_and_quoted_commas():
    parsed = cases.parse('question,expected\n"Capital of France, please?",Paris\nWhat is 2+2?,4\n')
    assert parsed.errors == []
    assert parsed.columns == ["question"]
    assert parsed.rows[0] == {"values": {"question": "Capital of France, please?"}, "expected": "Paris"}


def test_tab_separated_rows_pasted_from_a_spreadsheet():
    parsed = cases.parse("city\tcountry\nLyon\tFrance\n")
    assert parsed.errors == [] and parsed.rows[0]["values"] == {"city": "Lyon", "country": "France"}


def test_ragged_csv_rows_are_named_with_the_columns_expected():
    parsed = cases.parse("a,b,expected\n1,2,3\n4,5\n6,7,8,9\n")
    assert parsed.errors == [
        "row 2: 2 values for 3 columns (a, b, expected).",
        "row 3: 4 values for 3 columns (a, b, expected).",
    ]


def test_bad_header_names_and_too_many_rows():
    parsed = cases.parse("good,bad name,good\nx,y,z\n")
    assert "header, column 2: 'bad name' is not a variable name" in parsed.errors[0]
    assert "header, column 3: 'good' appears twice." in parsed.errors
    many = cases.parse("q\n" + "\n".join(f"row{i}" for i in range(1001)))
    assert many.errors[0] == "test cases: at most 1000 rows are allowed (got 1001)."


def test_a_value_over_the_limit_names_row_and_column():
    parsed = cases.parse("q\n" + "x" * (cases.MAX_VALUE + 1) + "\n")
    assert parsed.errors == [f"row 1, column q: at most {cases.MAX_VALUE} characters (got {cases.MAX_VALUE + 1})."]


def test_jsonl_rows_with_errors_by_row_and_column():
    text = '{"q": "one", "expected": "1"}\nnot json\n{"q": ["list"]}\n[1]\n{"q": 3}\n'
    parsed = cases.parse(text)
    assert parsed.errors[0].startswith("row 2: not valid JSON")
    assert parsed.errors[1:] == [
        "row 3, column q: must be text or a number.",
        "row 4: must be a JSON object of variable values.",
    ]
    assert parsed.rows[0] == {"values": {"q": "one"}, "expected": "1"}
    assert parsed.rows[-1]["values"] == {"q": "3"}


def test_each_grader_passes_and_fails():
    config = {"exact": True, "contains": "", "regex": r"^\d+$", "json": True, "max_length": 3}
    assert all(g["pass"] for g in graders.grade("42", "42", config).values())
    failed = graders.grade("forty-two!", "42", config)
    assert {kind: g["pass"] for kind, g in failed.items()} == {
        "exact": False,
        "contains": False,
        "regex": False,
        "json": False,
        "max_length": False,
    }
    assert failed["max_length"]["detail"] == "10 > 3 characters"


def test_json_schema_grader_reports_where_the_answer_fails():
    schema = {"type": "object", "required": ["answer"], "properties": {"answer": {"type": "integer"}}}
    assert graders.grade('{"answer": 4}', "", {"schema": schema})["schema"] == {"pass": True, "detail": ""}
    fenced = graders.grade('```json\n{"answer": 4}\n```', "", {"schema": schema})
    assert fenced["schema"]["pass"]
    wrong = graders.grade('{"answer": "four"}', "", {"schema": schema})["schema"]
    assert not wrong["pass"] and "answer" in wrong["detail"] and "integer" in wrong["detail"]
    missing = graders.grade("{}", "", {"schema": schema})["schema"]
    assert not missing["pass"] and "required" in missing["detail"]
    assert graders.grade("nope", "", {"schema": schema})["schema"]["detail"].startswith("not valid JSON")


def test_a_catastrophic_regex_is_stopped_not_hanging():
    started = time.monotonic()
    grade = graders.grade("x" * 5000, "", {"regex": r"(x+x+)+y"})["regex"]
    assert time.monotonic() - started < 2
    assert grade == {"pass": False, "detail": "the pattern took over 100 ms and was stopped"}


def test_grader_form_names_the_field_and_the_limit():
    form = graders.GradersForm({"regex": "(", "schema": '{"type": 12}', "max_length": "0"})
    assert not form.is_valid()
    assert form.errors["regex"][0].startswith("regex: not a valid pattern")
    assert form.errors["schema"][0].startswith("JSON Schema: not a valid schema")
    assert form.errors["max_length"] == ["max length: must be at least 1."]
    long = graders.GradersForm({"regex": "a" * (graders.MAX_PATTERN + 1)})
    assert long.errors["regex"] == [f"regex: at most {graders.MAX_PATTERN} characters."]
