"""The share page and the presenter strip show only the parameters that were set (as the request JSON does)."""

import pytest
from django.urls import reverse

pytestmark = [pytest.mark.django_db, pytest.mark.needs_local_api]

UNSET = {"stop": [], "response_format": None, "seed": "", "logit_bias": {}}


def test_the_share_page_lists_only_the_parameters_that_were_set(client, conversation, make_share):
    conversation.params = {"temperature": 0.3, "max_tokens": 200, **UNSET}
    conversation.save()
    share = make_share(conversation)
    page = client.get(reverse("sharing:view", args=[share.token])).content.decode()
    setup = page.split('id="setup-title"')[1].split("</dl>")[0]
    assert "<dt>temperature</dt><dd>0.3</dd>" in setup and "<dt>max_tokens</dt><dd>200</dd>" in setup
    for name in UNSET:
        assert f"<dt>{name}</dt>" not in setup
    assert "None" not in setup


def test_the_presenter_strip_shows_only_the_parameters_that_were_set(alice_client, conversation):
    conversation.params = {"temperature": 0.3, **UNSET}
    conversation.save()
    page = alice_client.get(reverse("chat:conversation", args=[conversation.pk]) + "?present=1").content.decode()
    strip = page.split('id="presenter-strip"')[1].split("</div>")[0]
    assert "temperature=0.3" in strip
    for name in UNSET:
        assert f"{name}=" not in strip
