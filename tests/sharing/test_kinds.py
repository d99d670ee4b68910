"""Access rules for every kind of share: anonymous, signed-in, revoked, expired, another user's token."""

import json
from datetime import timedelta
from html.parser import HTMLParser
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from playground.batches import services as batch_services
from playground.batches.models import Batch
from playground.connections.models import ensure_local_connection
from playground.sharing.models import Share
from playground.speech.models import SpeechClip
from tests.conftest import PASSWORD
from tests.sharing.conftest import AUDIO

pytestmark = [pytest.mark.django_db, pytest.mark.needs_local_api]

INPUT = [{"custom_id": "r1", "body": {"model": "local/chat", "messages": [{"role": "user", "content": "Name a tide"}]}}]
OUTPUT = [
    {"custom_id": "r1", "response": {"status_code": 200, "body": {"choices": [{"message": {"content": "Neap"}}]}}}
]


@pytest.fixture
def clip(alice):
    path = Path(settings.MEDIA_ROOT) / "speech" / str(alice.pk) / "kinds-test.wav"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(AUDIO)
    clip = SpeechClip.objects.create(
        owner=alice,
        connection=ensure_local_connection(alice),
        model="local/tts",
        voice="local/tts:alex",
        text="[S1] The tide turns.",
        response_format="wav",
        status=SpeechClip.COMPLETE,
        file=str(path.relative_to(settings.MEDIA_ROOT)),
        bytes=len(AUDIO),
    )
    yield clip
    path.unlink(missing_ok=True)


@pytest.fixture
def batch(alice, monkeypatch):
    files = {"file-in": INPUT, "file-out": OUTPUT}

    async def file_content(batch, file_id):
        return "\n".join(json.dumps(line) for line in files[file_id]).encode()

    monkeypatch.setattr(batch_services, "file_content", file_content)
    return Batch.objects.create(
        owner=alice,
        connection=ensure_local_connection(alice),
        remote_id="batch_1",
        input_file_id="file-in",
        output_file_id="file-out",
        input_filename="tides.jsonl",
        status="completed",
        request_counts={"total": 1, "completed": 1, "failed": 0},
    )


@pytest.fixture
def sources(conversation, rerank_pair, clip, batch):
    return {"conversation": conversation, "rerank": rerank_pair[1], "speech": clip, "batch": batch}


@pytest.fixture
def every_source(sources, evaluation):
    return {**sources, "evaluation": evaluation}


@pytest.mark.parametrize("kind", ["conversation", "rerank", "speech", "batch"])
def test_access_rules_for_every_kind(client, alice, bob, make_share, sources, kind):
    share = make_share(sources[kind])
    url = reverse("sharing:view", args=[share.token])
    page = client.get(url)
    assert page.status_code == 200 and page["X-Robots-Tag"].startswith("noindex")
    assert f'<meta property="og:title" content="{share.title}">' in page.content.decode()

    Share.objects.filter(pk=share.pk).update(visibility=Share.SIGNED_IN)
    client.logout()
    assert client.get(url).status_code == 404
    client.force_login(bob)
    assert client.get(url).status_code == 200
    assert client.post(reverse("sharing:revoke", args=[share.pk])).status_code == 404  # bob is not the owner

    Share.objects.filter(pk=share.pk).update(expires=timezone.now() - timedelta(seconds=1))
    assert client.get(url).status_code == 410  # a page in the site's layout says it expired
    Share.objects.filter(pk=share.pk).update(expires=None)
    owner = Client()
    owner.force_login(alice)
    owner.post(reverse("sharing:revoke", args=[share.pk]))
    assert client.get(url).status_code == 404


def test_a_shared_clip_plays_from_its_frozen_copy(client, make_share, clip):
    share = make_share(clip)
    page = client.get(reverse("sharing:view", args=[share.token])).content.decode()
    src = reverse("sharing:file", args=[share.token, "audio"])
    assert f'<audio controls preload="metadata" src="{src}"' in page
    assert "&quot;input&quot;: &quot;[S1] The tide turns.&quot;" in page
    part = client.get(src, HTTP_RANGE="bytes=0-3")
    assert part.status_code == 206 and b"".join(part) == AUDIO[:4]


def test_a_shared_batch_shows_its_requests_and_answers(client, make_share, batch):
    share = make_share(batch)
    page = client.get(reverse("sharing:view", args=[share.token])).content.decode()
    assert "Name a tide" in page and "Neap" in page and "tides.jsonl" in page


def test_a_streaming_clip_cannot_be_shared_yet(alice_client, clip):
    SpeechClip.objects.filter(pk=clip.pk).update(status=SpeechClip.STREAMING)
    page = alice_client.post(
        reverse("sharing:source", args=["speech", clip.pk]), {"visibility": "anyone", "expiry": "1d"}
    )
    assert "still being synthesized" in page.content.decode()
    assert not Share.objects.exists()


class _FormAsShown(HTMLParser):
    """What a browser would post from a form untouched: text values, checked boxes, each select's chosen option."""

    def __init__(self):
        super().__init__()
        self.data, self._select, self._first = {}, None, None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "input" and a.get("name") and a.get("type") not in ("submit", "button"):
            if a.get("type") not in ("radio", "checkbox") or "checked" in a:
                self.data[a["name"]] = a.get("value", "on")
        elif tag == "select":
            self._select, self._first = a["name"], None
        elif tag == "option" and self._select:
            self._first = self._first if self._first is not None else a.get("value", "")
            if "selected" in a:
                self.data[self._select] = a.get("value", "")

    def handle_endtag(self, tag):
        if tag == "select":
            self.data.setdefault(self._select, self._first)
            self._select = None


def _form_as_shown(page: str) -> dict:
    start = page.index('<form method="post" class="share-form"')
    form = page[start : page.index("</form>", start)]
    parser = _FormAsShown()
    parser.feed(form)
    return parser.data


SETTINGS = {"title": "Renamed", "visibility": Share.SIGNED_IN, "expiry": "30d", "live": "on"}


KINDS = ["conversation", "rerank", "speech", "batch", "evaluation"]
EDITS = [(kind, setting) for kind in KINDS for setting in SETTINGS if setting != "live" or kind == "conversation"]


@pytest.mark.parametrize("expiry", ["never", "1h"])
@pytest.mark.parametrize(("kind", "setting"), EDITS)
def test_editing_one_setting_of_a_link_keeps_the_others(alice_client, make_share, every_source, kind, setting, expiry):
    """Issue 37.1: the edit form preselects "Keep as it is", so a link that never expires (or expires in an hour)
    keeps its expiry when only its title, visibility or live changes; every kind of link, each setting alone."""
    share = make_share(every_source[kind])
    share.set_expiry(expiry)
    share.save()
    url = reverse("sharing:edit", args=[share.pk])
    page = alice_client.get(url).content.decode()
    data = _form_as_shown(page)
    assert data["expiry"] == "keep"
    assert ('name="live"' in page) == (kind == "conversation")
    fields = ("title", "visibility", "team", "expires", "live")
    before = Share.objects.values(*fields).get(pk=share.pk)

    assert alice_client.post(url, {**data, setting: SETTINGS[setting]}).status_code == 302
    after = Share.objects.values(*fields).get(pk=share.pk)
    changed = {key for key in fields if before[key] != after[key]}
    assert changed == ({"expires"} if setting == "expiry" else {setting}), (before, after)


@pytest.mark.parametrize("visibility", [Share.SIGNED_IN, Share.TEAM])
def test_an_anonymous_visitor_of_a_signed_in_link_is_told_to_sign_in_and_comes_back(
    client, alice, bob, make_share, conversation, visibility
):
    """Issue 37.9: not "revoked, or it never existed", but that it needs signing in, with the sign-in link that
    comes back to it (`?next=`); a signed-in user it is not for still meets the 404 that says nothing."""
    share = make_share(conversation, visibility=Share.SIGNED_IN)
    Share.objects.filter(pk=share.pk).update(visibility=visibility)
    url = reverse("sharing:view", args=[share.token])
    response = client.get(url)
    page = response.content.decode()
    assert response.status_code == 404 and "<h1>Sign in to open this link</h1>" in page
    assert "revoked" not in page and f'href="/accounts/login/?next={url.replace("/", "%2F")}">Sign in</a>' in page
    signed_in = client.post(reverse("accounts:login") + f"?next={url}", {"username": "bob", "password": PASSWORD})
    assert signed_in.status_code == 302 and signed_in["Location"] == url
    followed = client.get(url)
    if visibility == Share.SIGNED_IN:
        assert followed.status_code == 200
    else:  # bob is no member of the link's team: the page tells him nothing more
        assert followed.status_code == 404 and "revoked by its owner, or it never existed" in followed.content.decode()
