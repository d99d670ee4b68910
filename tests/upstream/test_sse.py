"""The SSE parser of the relay's hot path: events split on blank lines, whatever the reads and line ends."""

import pytest

from playground.upstream.sse import Parser


def feed_all(parts: list[bytes]) -> list[bytes]:
    parser = Parser()
    out = []
    for part in parts:
        out += parser.feed(part)
    return out


STREAM = (
    b'data: {"a": 1}\n\ndata: {"b": 2}\n\n: a comment\n\nevent: x\nid: 7\ndata: {"c":\ndata: 3}\n\ndata: [DONE]\n\n'
)
EXPECTED = [b'{"a": 1}', b'{"b": 2}', b'{"c":\n3}', b"[DONE]"]


@pytest.mark.parametrize("line_end", [b"\n", b"\r\n", b"\r"])
def test_every_line_end_of_the_grammar(line_end):
    assert feed_all([STREAM.replace(b"\n", line_end)]) == EXPECTED


@pytest.mark.parametrize("size", [1, 2, 3, 7, 64])
def test_events_split_across_reads_in_any_place(size):
    for stream in (STREAM, STREAM.replace(b"\n", b"\r\n")):
        parts = [stream[i : i + size] for i in range(0, len(stream), size)]
        assert feed_all(parts) == EXPECTED


def test_an_unfinished_event_waits_and_data_without_a_space_is_kept_whole():
    parser = Parser()
    assert parser.feed(b'data:{"x":1}\n\ndata: {"y"') == [b'{"x":1}']
    assert parser.pending == b'data: {"y"'
    assert parser.feed(b":2}\n\n") == [b'{"y":2}']
