"""Media parts by address: fetched through the outbound guard, bounded, refused in words (issue "the whole spec")."""

import asyncio
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from playground.lib import fetch
from tests.factories import wav
from tests.localapi import bombs
from tests.localapi.test_chat_media import ask, content, mp4, png
from tests.serving import thread_for

MB = 1024 * 1024
FILES = {
    "/green.png": ("image/png", png()),
    "/tone.wav": ("audio/wav", wav(1.5)),
    "/clip.mp4": ("video/mp4", mp4(seconds=3)),
    "/bomb.png": ("image/png", bombs.pixel_png()),
}


class Files(BaseHTTPRequestHandler):
    """Serves FILES, and the misbehaviours a fetch must survive."""

    redirect_to = ""

    def do_GET(self):
        if self.path in FILES:
            kind, body = FILES[self.path]
            return self.answer(200, kind, body)
        if self.path == "/to-refused":
            return self.answer(302, "text/plain", b"", location=self.redirect_to)
        if self.path == "/to-green":
            return self.answer(302, "text/plain", b"", location="/green.png")
        if self.path.startswith("/loop"):
            return self.answer(302, "text/plain", b"", location=self.path + "x")
        if self.path == "/declared-huge":
            return self.answer(200, "image/png", b"", length=21 * MB)
        if self.path == "/endless":
            self.send_response(200)
            self.send_header("content-type", "image/png")
            self.end_headers()
            try:
                while True:
                    self.wfile.write(b"\0" * 65536)
            except OSError:
                return
        if self.path == "/page.html":
            return self.answer(200, "text/html", b"<p>hello</p>")
        if self.path == "/gzipped":
            return self.answer(200, "image/png", b"\x1f\x8b", encoding="gzip")
        return self.answer(404, "text/plain", b"no such file")

    def answer(self, status, kind, body, *, location="", length=None, encoding=""):
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(body) if length is None else length))
        if location:
            self.send_header("location", location)
        if encoding:
            self.send_header("content-encoding", encoding)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class Listener:
    """A socket on 127.0.0.2 (a host not allowed) that counts the connections made to it."""

    def __init__(self):
        self.sock = socket.create_server(("127.0.0.2", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self.running = True
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        while self.running:
            try:
                connection, _ = self.sock.accept()
            except OSError:
                continue
            self.accepted += 1
            connection.close()

    def close(self):
        self.running = False
        self.thread.join()
        self.sock.close()


@pytest.fixture(scope="module")
def listener():
    refused = Listener()
    yield refused
    refused.close()


@pytest.fixture(scope="module")
def files(listener):
    """http://127.0.0.1:<port> (allowed by the live server's PLAYGROUND_ALLOWED_UPSTREAM_HOSTS)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), Files)
    server.daemon_threads = True
    Files.redirect_to = f"http://127.0.0.2:{listener.port}/green.png"
    thread = thread_for(server)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def part(kind: str, url: str) -> dict:
    return {"type": f"{kind}_url", f"{kind}_url": {"url": url}}


def refusal(response) -> str:
    assert response.status_code == 400, response.text
    return response.json()["message"]


def test_an_image_an_audio_file_and_a_video_are_fetched_by_address(api, files):
    text = content(
        ask(
            api,
            "local/omni",
            part("image", f"{files}/green.png"),
            part("audio", f"{files}/tone.wav"),
            part("video", f"{files}/clip.mp4"),
        )
    )
    assert "40×20 px PNG" in text and "red (75%)" in text
    assert "1.50 s" in text and "16000 Hz" in text
    assert "3.00 s mpeg4 video" in text


def test_an_allowed_redirect_is_followed(api, files):
    assert "40×20 px PNG" in content(ask(api, "local/vision", part("image", f"{files}/to-green")))


def test_a_host_not_allowed_is_refused_before_any_connection(api, listener):
    before = listener.accepted
    message = refusal(ask(api, "local/vision", part("image", f"http://127.0.0.2:{listener.port}/green.png")))
    assert message.startswith("messages[0].content[1].image_url.url: cannot fetch http://127.0.0.2:")
    assert "not in PLAYGROUND_ALLOWED_UPSTREAM_HOSTS" in message
    assert listener.accepted == before


def test_a_redirect_to_a_host_not_allowed_is_refused(api, files, listener):
    before = listener.accepted
    message = refusal(ask(api, "local/vision", part("image", f"{files}/to-refused")))
    assert "address not allowed (127.0.0.2: this host is not in PLAYGROUND_ALLOWED_UPSTREAM_HOSTS.)" in message
    assert listener.accepted == before


def test_redirects_are_bounded(api, files):
    assert "more than 3 redirects" in refusal(ask(api, "local/vision", part("image", f"{files}/loop")))


@pytest.mark.parametrize(
    ("path", "words"),
    [
        ("/declared-huge", "the file is larger than the limit of 20 MB"),
        ("/endless", "larger than the limit of 20 MB (stopped reading there)"),
        ("/gzipped", "compressed body"),
        ("/missing.png", "the server answered HTTP 404"),
    ],
)
def test_oversized_compressed_and_missing_files_are_refused_in_words(api, files, path, words):
    message = refusal(ask(api, "local/vision", part("image", files + path)))
    assert message.startswith(f"messages[0].content[1].image_url.url: cannot fetch {files}{path}: ")
    assert words in message


@pytest.mark.parametrize(
    ("kind", "path", "words"),
    [
        ("image", "/tone.wav", "the content type is audio/wav, not image/*"),
        ("audio", "/green.png", "the content type is image/png, not audio/*"),
        ("video", "/page.html", "the content type is text/html, not video/*"),
    ],
)
def test_the_content_type_must_match_the_part(api, files, kind, path, words):
    assert words in refusal(ask(api, "local/omni", part(kind, files + path)))


def test_fetched_media_go_through_the_same_header_first_limits(api, files):
    assert "LOCAL_API_MEDIA_MAX_PIXELS" in refusal(ask(api, "local/vision", part("image", f"{files}/bomb.png")))


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://127.0.0.1/green.png", "gopher://x/"])
def test_only_http_and_https_addresses_are_fetched(api, url):
    message = refusal(ask(api, "local/vision", part("image", url)))
    assert message == (
        "messages[0].content[1].image_url.url: must be a base64 data: URI or an http:// or https:// address"
    )


def test_the_base64_only_model_refuses_addresses(api, files):
    message = refusal(ask(api, "local/vision-b64", part("image", f"{files}/green.png")))
    assert "accepts base64 image data only" in message


# Slow servers, against the fetch itself with short timeouts (the live server's are seconds long).


async def serve(handler):
    server = await asyncio.start_server(handler, "127.0.0.1", 0)
    return server, f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/slow.png"


async def silent(reader, writer):
    await reader.readuntil(b"\r\n\r\n")
    await asyncio.sleep(5)
    writer.close()


async def dripping(reader, writer):
    await reader.readuntil(b"\r\n\r\n")
    writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: image/png\r\ncontent-length: 100000\r\n\r\n")
    try:
        for _ in range(100):
            writer.write(b"x")
            await writer.drain()
            await asyncio.sleep(0.05)
    except OSError:
        pass
    writer.close()


# Each case leaves room between the limit it is about and the other one, so that a busy machine (the request's own
# start taking longer) cannot make the other limit the one that fires.
@pytest.mark.parametrize(
    ("handler", "read", "total", "words"),
    [
        (silent, 0.3, 3, "the server did not answer in time (connect 1 s, read 0.3 s)"),
        (dripping, 2, 0.6, "no complete answer within 0.6 s"),
    ],
)
async def test_a_slow_server_is_cut_off_in_words(settings, handler, read, total, words):
    settings.ALLOWED_UPSTREAM_HOSTS = ["127.0.0.1"]
    server, url = await serve(handler)
    limits = fetch.Limits(max_bytes=MB, connect_timeout=1, read_timeout=read, total_timeout=total)
    try:
        with pytest.raises(fetch.FetchError) as caught:
            await fetch.fetch(url, accept=("image/",), limits=limits)
    finally:
        server.close()
    assert str(caught.value) == words


async def test_an_unresolvable_host_fails_in_words(settings):
    settings.ALLOWED_UPSTREAM_HOSTS = []
    with pytest.raises(fetch.FetchError) as caught:
        await fetch.fetch("http://no-such-host.invalid/x.png", accept=("image/",), limits=fetch.Limits(max_bytes=MB))
    assert str(caught.value) == "cannot reach it (Cannot resolve no-such-host.invalid.)"


def test_the_local_api_reaches_the_outbound_guard_without_importing_the_upstream_client():
    """The guard sits in lib/, below both of its users; the local API imports nothing of upstream/ nor httpx."""
    import ast
    from pathlib import Path

    import playground.localapi

    imported = set()
    for path in Path(playground.localapi.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                imported.update(f"{node.module}.{alias.name}" for alias in node.names)
            elif isinstance(node, ast.Import):
                imported.update(alias.name for alias in node.names)
    outside = {
        name for name in imported if name.startswith("playground.") and not name.startswith("playground.localapi")
    }
    assert outside == {
        "playground.inputs",
        "playground.lib.detached",
        "playground.lib.downloads",
        "playground.lib.drain",
        "playground.lib.fetch",
        "playground.lib.files",
        "playground.lib.metrics",
    }
    assert not {name for name in imported if name.startswith(("playground.upstream", "httpx"))}
