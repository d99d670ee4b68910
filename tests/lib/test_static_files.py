"""Static files answered in front of Django (playground/lib/static_files.py): the same files and headers as
WhiteNoise's middleware, and everything else passed on."""

from pathlib import Path

from django.conf import settings

from playground.lib.static_files import StaticFiles

SCRIPT = Path(settings.BASE_DIR) / "static" / "js" / "chat" / "stream.js"


async def call(app, path: str, method: str = "GET", headers: list | None = None) -> list[dict]:
    sent = []

    async def receive():
        return {"type": "http.request", "body": b""}

    async def send(message):
        sent.append(message)

    await app({"type": "http", "method": method, "path": path, "headers": headers or []}, receive, send)
    return sent


async def django(scope, receive, send):
    await send({"type": "http.response.start", "status": 299, "headers": []})
    await send({"type": "http.response.body", "body": b"django"})


async def test_a_static_file_is_answered_without_django():
    sent = await call(StaticFiles(django), "/static/js/chat/stream.js")
    start, body = sent
    headers = dict(start["headers"])
    assert start["status"] == 200
    assert body["body"] == SCRIPT.read_bytes()
    assert headers[b"content-type"].startswith(b"text/javascript")
    assert headers[b"x-content-type-options"] == b"nosniff"
    assert b"etag" in headers or b"last-modified" in headers


async def test_a_fresh_copy_is_not_sent_again():
    app = StaticFiles(django)
    first, _ = await call(app, "/static/js/chat/stream.js")
    modified = dict(first["headers"])[b"last-modified"]
    again, body = await call(app, "/static/js/chat/stream.js", headers=[(b"if-modified-since", modified)])
    assert again["status"] == 304
    assert body["body"] == b""


async def test_anything_else_goes_to_django():
    app = StaticFiles(django)
    for path, method in (("/static/no/such.js", "GET"), ("/c/1/", "GET"), ("/static/js/chat/stream.js", "POST")):
        start, body = await call(app, path, method)
        assert (start["status"], body["body"]) == (299, b"django")
