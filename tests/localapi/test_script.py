"""The script's directive reader, without a server: what counts as a directive and what is plain text."""

import pytest

from playground.localapi.engines.generator import script


def test_values_may_hold_balanced_brackets_and_names_any_case():
    stated = script.read("[SAY:see [the docs](https://example.com)] [Think:a [b] c]")
    assert stated.say == ["see [the docs](https://example.com)"]
    assert stated.think == ["a [b] c"]
    # An unclosed opening is plain text; a stray closing bracket before a directive does not matter.
    assert script.read("[say:a [say:b]").say == ["b"]
    assert script.read("x]] [say:a]b]").say == ["a"]


def test_clean_removes_every_directive_and_keeps_plain_brackets():
    text = "Rivers [say:x] [chunks:2] flow [fault:stall-1] [see note] [say:unclosed"
    assert script.clean(text) == "Rivers   flow  [see note] [say:unclosed"


def test_a_fault_value_outside_the_switch_alphabet_is_plain_text():
    assert script.fault_directive("a [fault:not a fault] b [FAULT:Drop-After-3]") == "drop-after-3"
    assert script.clean("[fault:not a fault]") == "[fault:not a fault]"
    assert script.fault_directive("no directive") is None


def test_calls_keep_their_order_and_default_to_no_arguments():
    stated = script.read('[call:ping] [call:get_weather {"city": "Paris", "tags": [1, 2]}]')
    assert [(c["name"], c["arguments"]) for c in stated.calls] == [
        ("ping", {}),
        ("get_weather", {"city": "Paris", "tags": [1, 2]}),
    ]


def test_header_fields_replace_the_directives_ones():
    stated = script.from_header('{"say": ["a", "b"], "chunks": 2}', script.read("[say:x] [think:y] [chunks:9]"))
    assert (stated.say, stated.think, stated.chunks) == (["a", "b"], ["y"], 2)
    assert [stated.pick(stated.say, i) for i in range(3)] == ["a", "b", "a"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[call:no such name!]", "[call:no such name!]: the arguments after no must be a JSON object"),
        ("[call:f [1]]", "[call:f [1]]: the arguments after f must be a JSON object"),
        ("[chunks:many]", "[chunks:many]: must be a whole number from 1 to 100000"),
    ],
)
def test_directives_that_cannot_be_followed_say_which(text, message):
    with pytest.raises(script.ScriptError) as caught:
        script.read(text)
    assert str(caught.value).startswith(message)
