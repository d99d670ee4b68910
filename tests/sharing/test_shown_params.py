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


TOOLS = [{"type": "function", "function": {"name": "tide", "parameters": {"type": "object", "properties": {}}}}]
SPELLED = {"temperature": 0.3, "stream": True, "logprobs": False, "tools": TOOLS}


def test_shared_and_presenter_pages_spell_parameters_as_json(client, alice_client, conversation, make_share):
    """Issue 37.6: true/false/null and JSON, never Python's True or [{'type': …}]."""
    conversation.params = SPELLED
    conversation.save()
    share = make_share(conversation)
    page = client.get(reverse("sharing:view", args=[share.token])).content.decode()
    setup = page.split('id="setup-title"')[1].split("</dl>")[0]
    assert "<dt>stream</dt><dd>true</dd>" in setup and "<dt>logprobs</dt><dd>false</dd>" in setup
    assert (
        "<dd>[{&quot;type&quot;: &quot;function&quot;, &quot;function&quot;: {&quot;name&quot;: &quot;tide&quot;"
        in setup
    )
    assert "True" not in setup and "False" not in setup and "&#x27;" not in setup

    page = alice_client.get(reverse("chat:conversation", args=[conversation.pk]) + "?present=1").content.decode()
    strip = page.split('id="presenter-strip"')[1].split("</div>")[0]
    assert "stream=true" in strip and "logprobs=false" in strip
    assert "True" not in strip and "&#x27;" not in strip


def test_rerank_pages_spell_parameters_as_json(client, alice_client, rerank_pair, make_share):
    other = rerank_pair[1]
    for run in rerank_pair:
        run.params = {"top_n": 3, "return_documents": False, "instruction": None}
        run.save()
    page = alice_client.get(reverse("rerank:detail", args=[other.pk])).content.decode()
    shown = page.split("<dt>Parameters</dt><dd>")[1].split("</dd>")[0]  # in the database's order of keys
    assert sorted(shown.split(", ")) == ["instruction=null", "return_documents=false", "top_n=3"]
    shared = client.get(reverse("sharing:view", args=[make_share(other).token])).content.decode()
    assert "<dt>return_documents</dt><dd>false</dd>" in shared and "<dt>instruction</dt><dd>null</dd>" in shared
    assert "False" not in shared and "None" not in shared
