"""The chat page's assets: its first paint needs no markdown library and no KaTeX (markdown.js loads them, issue 24);
once collected, everything it links is fingerprinted and served as immutable (issue 36)."""

import asyncio
import re

import pytest
from django.core.management import call_command

from playground.lib.bundles import BUNDLES
from playground.lib.static_files import StaticFiles

pytestmark = [pytest.mark.django_db, pytest.mark.needs_local_api]  # a conversation on the Local connection

FINGERPRINTED = re.compile(r"\.([0-9a-f]{12})\.(js|css|woff2?|ttf|png|svg|ico)\b")


def test_the_chat_page_loads_no_markdown_library_or_katex_before_its_first_paint(alice_client, make_conversation):
    html = alice_client.get(f"/c/{make_conversation().pk}/").content.decode()
    scripts = re.findall(r'<script src="([^"]+)"', html)
    styles = re.findall(r'<link rel="stylesheet" href="([^"]+)"', html)
    assert "js/chat/markdown.js" in BUNDLES["bundles/chat.js"]
    assert any(src.endswith("bundles/chat.js") for src in scripts)
    assert not [url for url in scripts + styles if "katex" in url or "markdown-it" in url or "purify" in url]
    # markdown.js finds their addresses on the tag of the script it runs in (document.currentScript): the bundle's.
    tag = re.search(r"<script[^>]*bundles/chat\.js[^>]*>", html).group(0)
    for name in ("data-markdown-it", "data-purify", "data-katex", "data-katex-css"):
        assert f'{name}="/static/' in tag


@pytest.fixture
def collected_static(tmp_path, settings):
    """The static files collected as `make run` does (fingerprinted, with gzip copies), and served from there."""
    settings.STATIC_ROOT = tmp_path / "staticfiles"
    settings.WHITENOISE_USE_FINDERS = False
    call_command("collectstatic", "--noinput", verbosity=0)
    return settings.STATIC_ROOT


async def fetch(path: str, headers=()) -> tuple[int, dict, bytes]:
    """A GET through the ASGI wrapper that serves static files in front of Django (playground/lib/static_files.py)."""
    sent = []

    async def receive():
        return {"type": "http.request", "body": b""}

    async def send(message):
        sent.append(message)

    async def django(scope, receive, send):
        await send({"type": "http.response.start", "status": 404, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    scope = {"type": "http", "method": "GET", "path": path, "headers": list(headers)}
    await StaticFiles(django)(scope, receive, send)
    return sent[0]["status"], dict(sent[0]["headers"]), sent[1]["body"]


def test_collected_pages_link_fingerprinted_files_served_as_immutable(
    alice_client, make_conversation, collected_static
):
    """A warm load revalidates nothing: every script and style the page links has its content's hash in its name and
    comes with a year's max-age and `immutable`; the plain names still answer (an old page's links), briefly cached."""
    html = alice_client.get(f"/c/{make_conversation().pk}/").content.decode()
    linked = re.findall(r'(?:src|href|data-[a-z-]+)="(/static/[^"]+)"', html)
    assert {url.split("/static/")[1].split(".")[0] for url in linked} >= {
        "bundles/chat",
        "js/theme",
        "vendor/katex/katex",
    }
    for url in linked:
        assert FINGERPRINTED.search(url), url
        status, headers, body = asyncio.run(fetch(url, [(b"accept-encoding", b"gzip")]))
        assert status == 200 and body, url
        assert headers[b"cache-control"] == b"max-age=315360000, public, immutable", url
        if url.endswith((".js", ".css")):
            assert headers[b"content-encoding"] == b"gzip", url
    plain = FINGERPRINTED.sub(r".\2", next(url for url in linked if "bundles/chat" in url))
    status, headers, _ = asyncio.run(fetch(plain))
    assert status == 200 and headers[b"cache-control"] == b"max-age=60, public"


def test_uncollected_pages_link_the_plain_names(alice_client, make_conversation, settings):
    """Before `collectstatic` (the tests, a script changed since), the finders serve static/ by its plain names."""
    settings.WHITENOISE_USE_FINDERS = True
    html = alice_client.get(f"/c/{make_conversation().pk}/").content.decode()
    assert '<script src="/static/bundles/chat.js"' in html
    assert not FINGERPRINTED.search(html)
