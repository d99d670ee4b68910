"""The chat page's bundles (playground/lib/bundles.py): their sources joined in order, rebuilt when a source
changes, found and served like any static file; and HTML answered gzipped (playground/lib/compression.py)."""

import gzip
import os
import re
from pathlib import Path

import pytest
from django.contrib.staticfiles import finders
from django.http import HttpResponse, JsonResponse, StreamingHttpResponse
from django.test import RequestFactory

from playground.chat.models import Conversation
from playground.connections.models import ensure_local_connection
from playground.lib import bundles
from playground.lib.compression import HtmlGZipMiddleware


@pytest.fixture
def sources(tmp_path, monkeypatch):
    folder = tmp_path / "static"
    folder.mkdir()
    for name, text in (("a.js", "var a = 1 // no semicolon"), ("b.js", "(function () {})();\n")):
        (folder / name).write_text(text)
    monkeypatch.setattr(bundles, "BUNDLES", {"bundles/t.js": ["a.js", "b.js"]})
    monkeypatch.setattr(bundles, "source", lambda name: folder / name)
    return folder


def test_a_bundle_is_its_sources_in_order_each_headed_by_its_path(sources, tmp_path):
    built = bundles.build("bundles/t.js", tmp_path / "out")
    assert built.read_text() == "/* a.js */\nvar a = 1 // no semicolon\n;\n/* b.js */\n(function () {})();\n"


def test_a_bundle_is_rebuilt_when_a_source_changes_and_only_then(sources, tmp_path):
    built = bundles.build("bundles/t.js", tmp_path / "out")
    os.utime(built, (1, 1))
    bundles.build("bundles/t.js", tmp_path / "out")
    assert built.stat().st_mtime == 1  # unchanged: not written again (collectstatic and ETags see no change)
    (sources / "b.js").write_text("window.b = 2;")
    bundles.build("bundles/t.js", tmp_path / "out")
    assert built.read_text().endswith("/* b.js */\nwindow.b = 2;\n")


def test_the_finders_give_the_bundles_as_their_sources_make_them_now():
    for name in bundles.BUNDLES:
        path = finders.find(name)
        assert path and Path(path).read_bytes() == bundles.content(name)
    listed = {path for finder in finders.get_finders() for path, _ in finder.list(None)}
    assert listed >= bundles.BUNDLES.keys()  # so collectstatic copies them (and WhiteNoise's finders serve them)


def test_joining_the_stylesheets_changes_none_of_them():
    """A bundle lives in another folder, so a relative url() would point elsewhere, and an @import or @charset
    is only honoured at the top of a stylesheet."""
    for name, parts in bundles.BUNDLES.items():
        if name.endswith(".css"):
            for part in parts:
                text = bundles.source(part).read_text()
                assert not re.search(r"@import|@charset|url\(\s*['\"]?(?!data:)", text), part


@pytest.mark.django_db
@pytest.mark.needs_local_api
def test_the_chat_page_loads_its_bundles_and_they_are_served(alice_client, alice, catalog):
    conversation = Conversation.objects.create(owner=alice, connection=ensure_local_connection(alice))
    html = alice_client.get(f"/c/{conversation.pk}/").content.decode()
    assert re.findall(r'<link rel="stylesheet" href="([^"]+)"', html) == ["/static/bundles/chat.css"]
    for name in bundles.BUNDLES:
        response = alice_client.get(f"/static/{name}")
        assert response.status_code == 200
        assert b"".join(response.streaming_content) == bundles.content(name)


def gzipped(response, accept="gzip, deflate, br"):
    request = RequestFactory().get("/", headers={"accept-encoding": accept})
    return HtmlGZipMiddleware(lambda request: response)(request)


def test_html_is_gzipped_with_the_breach_mitigation():
    page = "<!doctype html><p>" + "hello " * 500
    first = gzipped(HttpResponse(page))
    assert first["Content-Encoding"] == "gzip" and "Accept-Encoding" in first["Vary"]
    assert gzip.decompress(first.content).decode() == page
    # Random bytes of a random length in the header: the length tells an attacker nothing. Two responses may draw
    # the same (0 bytes, say: 1 in 100 each); five do not.
    assert len({first.content, *(gzipped(HttpResponse(page)).content for _ in range(4))}) > 1
    assert not gzipped(HttpResponse(page), accept="identity").has_header("Content-Encoding")


def test_json_and_streams_are_not_gzipped():
    assert not gzipped(JsonResponse({"text": "hello " * 500})).has_header("Content-Encoding")
    stream = gzipped(StreamingHttpResponse(iter([b"data: 1\n\n"]), content_type="text/event-stream"))
    assert not stream.has_header("Content-Encoding")
    assert list(stream.streaming_content) == [b"data: 1\n\n"]
