"""Every script file is loaded by a page that uses it, and only there: no file nobody loads, no extension no
markup asks for, and the chat's behaviours only on the chat pages (in their bundle, playground/lib/bundles.py)."""

import re
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.staticfiles import finders
from django.urls import reverse

from playground.chat.models import Conversation
from playground.connections.models import ensure_local_connection
from playground.lib.bundles import BUNDLES

STATIC = Path(settings.BASE_DIR) / "static"
TEMPLATES = Path(settings.BASE_DIR) / "templates"
STATIC_TAG = re.compile(r"""\{%\s*static\s+['"]([^'"]+)['"]\s*%\}""")
STATIC_CALL = re.compile(r"""\bstatic\(\s*['"]([^'"]+)['"]\s*\)""")  # template tags that emit script tags
SCRIPT_SRC = re.compile(r"""<script[^>]*\bsrc="([^"]+)\"""")
CHAT_SCRIPTS = {
    f"js/chat/{name}.js"
    for name in (
        "messages",
        "attachments",
        "panel",
        "composer",
        "markdown",
        "choices",
        "final",
        "paint",
        "reconnect",
        "start",
        "socket",
        "stream",
    )
}
# Vendored for the browser tests, which inject it into each page they open (tests/browser/axe.py); no page loads it.
TEST_ONLY = {"vendor/axe.min.js"}


def templates() -> dict[Path, str]:
    return {path: path.read_text() for path in TEMPLATES.rglob("*.html")}


def referenced() -> set[str]:
    names = {name for text in templates().values() for name in STATIC_TAG.findall(text)}
    tags = Path(settings.BASE_DIR, "playground").glob("*/templatetags/*.py")
    return names | {name for path in tags for name in STATIC_CALL.findall(path.read_text())}


def loaded(names: set[str]) -> set[str]:
    """The files those names bring: a bundle brings its parts."""
    return names | {part for name in names & BUNDLES.keys() for part in BUNDLES[name]}


def scripts_on(response) -> list[str]:
    assert response.status_code == 200
    return [src.split("/static/", 1)[1] for src in SCRIPT_SRC.findall(response.content.decode())]


def test_every_script_file_is_loaded_by_some_template_and_every_reference_exists():
    files = {path.relative_to(STATIC).as_posix() for path in STATIC.rglob("*.js")}
    names = referenced()
    assert files - loaded(names) - TEST_ONLY == set(), "script files no template or bundle loads"
    missing = {name for name in loaded(names) - BUNDLES.keys() if not (STATIC / name).exists()}
    assert missing == set()


def test_a_vendored_htmx_extension_is_only_shipped_when_markup_uses_it():
    markup = "\n".join(templates().values())
    for path in (STATIC / "vendor").glob("*.js"):
        for extension in re.findall(r"""defineExtension\(\s*["']([\w-]+)["']""", path.read_text()):
            assert re.search(rf"""hx-ext="[^"]*\b{extension}\b""", markup), f"{path.name}: no hx-ext={extension}"


@pytest.mark.needs_local_api
def test_the_chat_scripts_load_on_the_chat_pages_only(alice_client, alice, catalog):
    conversation = Conversation.objects.create(owner=alice, connection=ensure_local_connection(alice))
    for url in (reverse("chat:index"), reverse("chat:conversation", args=[conversation.pk])):
        scripts = scripts_on(alice_client.get(url))
        assert scripts == ["js/theme.js", "bundles/chat.js"]  # one request for every deferred script
        parts = BUNDLES["bundles/chat.js"]
        assert set(parts) >= CHAT_SCRIPTS
        # The renderer comes last: it announces the articles on the page to the behaviours as it starts.
        assert parts[-1] == "js/chat/stream.js"
    for url in (reverse("connections:index"), reverse("catalog:index", args=[conversation.connection_id])):
        scripts = loaded(set(scripts_on(alice_client.get(url))))
        assert not any(src.startswith("js/chat/") for src in scripts), url
        assert all(finders.find(src) for src in scripts), scripts


def test_script_comments_cite_only_documents_that_exist():
    root = Path(settings.BASE_DIR)
    for path in STATIC.joinpath("js").rglob("*.js"):
        for document in re.findall(r"[\w./-]+\.md\b", path.read_text()):
            cited = [root / document, root / "docs" / Path(document).name]
            assert any(place.exists() for place in cited), f"{path.name} cites {document}, which does not exist"
