"""The one download helper: RFC 6266 names, single byte ranges, 416 and HEAD."""

import io
from urllib.parse import unquote

import pytest
from django.test import RequestFactory

from playground.lib import downloads

DATA = bytes(range(256)) * 4  # 1024 bytes, each position recognisable


async def body(response) -> bytes:
    return b"".join([chunk async for chunk in response.streaming_content])


def get(method="get", **headers):
    return getattr(RequestFactory(), method)("/file", headers=headers)


def opened() -> io.BytesIO:
    return io.BytesIO(DATA)


def test_an_ascii_name_is_a_plain_quoted_filename():
    assert downloads.disposition("report.pdf") == 'attachment; filename="report.pdf"'
    assert downloads.disposition("dot.png", inline=True) == 'inline; filename="dot.png"'


def test_a_non_ascii_name_adds_filename_star_in_utf8():
    header = downloads.disposition("Résumé – 東京.txt")
    plain, star = header.split("; filename*=")
    assert plain == 'attachment; filename="Resume  .txt"'
    assert star.startswith("UTF-8''") and unquote(star.removeprefix("UTF-8''")) == "Résumé – 東京.txt"


@pytest.mark.parametrize("name", ['a"b.txt', "a\\b.txt", "a\r\nSet-Cookie: x.txt"])
def test_quotes_backslashes_and_line_breaks_cannot_break_out_of_the_header(name):
    header = downloads.disposition(name)
    plain = header.split("; filename*=")[0]
    assert plain.count('"') == 2 and "\\" not in plain and "\r" not in header and "\n" not in header
    assert unquote(header.split("UTF-8''")[1]) == name


def test_a_name_with_nothing_ascii_falls_back_to_download():
    assert downloads.disposition("東京").startswith('attachment; filename="download"; filename*=')


async def test_the_whole_file_is_a_200_with_length_and_accept_ranges():
    response = downloads.serve_file(get(), opened, size=len(DATA), content_type="text/plain", filename="a.bin")
    assert response.status_code == 200 and await body(response) == DATA
    assert response["Content-Length"] == "1024" and response["Accept-Ranges"] == "bytes"
    assert "Content-Range" not in response and response["Content-Disposition"] == 'attachment; filename="a.bin"'


@pytest.mark.parametrize(
    ("header", "start", "end"),
    [("bytes=100-199", 100, 199), ("bytes=-24", 1000, 1023), ("bytes=1000-", 1000, 1023), ("bytes=0-99999", 0, 1023)],
)
async def test_a_range_is_a_206_with_exactly_those_bytes(header, start, end):
    response = downloads.serve_file(
        get(Range=header), opened, size=len(DATA), content_type="text/plain", filename="a.bin"
    )
    assert response.status_code == 206 and await body(response) == DATA[start : end + 1]
    assert response["Content-Range"] == f"bytes {start}-{end}/1024"
    assert response["Content-Length"] == str(end - start + 1)


async def test_a_range_over_a_prefix_and_the_file_reads_across_both():
    response = downloads.serve_file(
        get(Range="bytes=2-5"), opened, size=len(DATA), content_type="audio/wav", filename="a.wav", prefix=b"HEAD"
    )
    assert await body(response) == b"AD" + DATA[:2]
    assert response["Content-Range"] == "bytes 2-5/1028"


@pytest.mark.parametrize("header", ["bytes=1024-", "bytes=2000-3000", "bytes=-0", "bytes=50-10"])
async def test_an_unsatisfiable_range_is_a_416_naming_the_size(header):
    response = downloads.serve_bytes(get(Range=header), DATA, content_type="text/plain", filename="a.bin")
    assert response.status_code == 416 and response["Content-Range"] == "bytes */1024"


@pytest.mark.parametrize("header", ["bytes=0-1,5-6", "items=0-5", "bytes=" + "9" * 40 + "-", "nonsense"])
async def test_a_range_we_do_not_serve_is_ignored(header):
    response = downloads.serve_bytes(get(Range=header), DATA, content_type="text/plain", filename="a.bin")
    assert response.status_code == 200 and await body(response) == DATA


async def test_head_has_the_headers_and_reads_nothing():
    def never_opened():
        raise AssertionError("HEAD must not open the file")

    response = downloads.serve_file(
        get("head", Range="bytes=10-19"), never_opened, size=len(DATA), content_type="text/plain", filename="a.bin"
    )
    assert response.status_code == 206 and response["Content-Length"] == "10"
    assert await body(response) == b""


async def test_an_empty_file_is_a_200_with_no_body():
    response = downloads.serve_bytes(get(), b"", content_type="text/plain", filename="empty.txt")
    assert response.status_code == 200 and response["Content-Length"] == "0" and await body(response) == b""
