"""The chat page's first paint needs no markdown library and no KaTeX: markdown.js loads them (issue 24)."""

import re

import pytest

from playground.lib.bundles import BUNDLES

pytestmark = [pytest.mark.django_db, pytest.mark.needs_local_api]  # a conversation on the Local connection


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
