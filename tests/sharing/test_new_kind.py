"""A new kind of share is one app: a throwaway feature (tests/sharing/kindapp: a model with `share_links()`, a
`sharing.py` with its Kind, its page template) plus one line in SHARE_KINDS is shared, viewed, shown as code and
deleted with its links, and sharing names no kind anywhere in its modules or templates."""

import re
from pathlib import Path

import pytest
from django.conf import settings
from django.test import override_settings
from django.urls import reverse

from playground.sharing import kinds
from playground.sharing.models import Share

ROOT = Path(__file__).resolve().parents[2]
KIND = "tests.sharing.kindapp.sharing.NoteKind"


def _sharing_texts() -> dict[str, str]:
    sources = [p for p in (ROOT / "playground" / "sharing").rglob("*.py") if "migrations" not in p.parts]
    sources += list((ROOT / "templates" / "sharing").rglob("*.html"))
    return {str(p.relative_to(ROOT)): p.read_text() for p in sources}


def _kind_words() -> set[str]:
    words = set()
    for kind in kinds.all_kinds():
        app_label, model = kind.model.split(".")
        app = type(kind).__module__.split(".")[1]  # playground.<app>.sharing
        words |= {kind.name, kind.label, kind.plural, app_label, app, model}
        words |= set(kind.label.split())  # "Speech clip" -> speech, clip
    return {w.lower() for w in words} - {"run"}  # "run" is a plain word (and evaluate's Run model)


def test_sharing_names_no_kind_in_its_modules_nor_its_templates():
    words = _kind_words()
    assert {"conversation", "rerank", "speech", "batch", "evaluation", "chat", "clip"} <= words
    found = [
        (where, word)
        for where, text in _sharing_texts().items()
        for word in words
        if re.search(rf"\b{re.escape(word)}s?\b", text, re.IGNORECASE)
    ]
    assert found == []


@pytest.fixture
def note_kind():
    """The one settings line (the app is installed as any feature's app is: tests/settings.py)."""
    from tests.sharing.kindapp.models import Note

    with override_settings(SHARE_KINDS=[*settings.SHARE_KINDS, KIND]):
        yield Note


@pytest.mark.django_db
def test_a_throwaway_kind_from_its_own_app_is_shared_viewed_coded_and_deleted(note_kind, alice, bob, client):
    note = note_kind.objects.create(owner=alice, words="Seven rivers & one lake.")
    client.force_login(bob)
    assert client.get(reverse("sharing:source", args=["note", note.pk])).status_code == 404  # its owner check
    client.force_login(alice)
    page = client.post(reverse("sharing:source", args=["note", note.pk]), {"visibility": "anyone", "expiry": "7d"})
    assert page.status_code == 302
    share = Share.objects.for_source(note).get()
    assert (share.kind, share.source, share.content) == ("note", note, {"words": note.words})

    client.logout()
    shown = client.get(reverse("sharing:view", args=[share.token]))
    assert shown.status_code == 200
    assert b'<p class="shared-note">Seven rivers &amp; one lake.</p>' in shown.content
    assert b"Shared note" in shown.content

    client.force_login(alice)
    code = client.get(reverse("sharing:code", args=["note", note.pk]))
    assert code.status_code == 200 and b"chat/completions" in code.content

    note.delete()
    assert not Share.objects.filter(pk=share.pk).exists()  # deleted with its source, through share_links()
