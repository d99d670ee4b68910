"""Prompt versions are immutable; names are unique per owner; another user's prompt is a 404; the editor parses
parameters as the chat panel does and refuses bad input in words, saving nothing."""

import pytest
from django.urls import reverse

from playground.prompts.models import ImmutableVersion, Prompt, PromptVersion
from tests.prompts.conftest import draft, make_prompt

pytestmark = [pytest.mark.django_db, pytest.mark.needs_local_api]


def test_a_saved_version_cannot_be_changed_or_deleted_in_place(alice):
    prompt = make_prompt(alice)
    version = prompt.versions.get()
    version.template = "changed"
    with pytest.raises(ImmutableVersion):
        version.save()
    with pytest.raises(ImmutableVersion):
        PromptVersion.objects.filter(pk=version.pk).update(template="changed")
    with pytest.raises(ImmutableVersion):
        version.delete()
    assert PromptVersion.objects.get(pk=version.pk).template == "Summarise {{topic}} in {{n}} words."


def _post_version(client, prompt, **fields):
    data = {
        "system": "You are terse.",
        "template": "Summarise {{topic}}.",
        "connection": prompt.owner.connections.get(is_local=True).pk,
        "model": "local/chat",
        "stream": "on",
        "message": "shorter",
    } | fields
    return client.post(reverse("prompts:edit", args=[prompt.pk]), data)


def test_every_view_creates_a_version_and_leaves_the_old_ones_as_they_were(alice_client, alice):
    prompt = make_prompt(alice)
    before = list(PromptVersion.objects.values())
    response = _post_version(alice_client, prompt, temperature="0.3")
    assert response.status_code == 302
    response = alice_client.post(reverse("prompts:restore", args=[prompt.pk, 1]))
    assert response.status_code == 302
    alice_client.post(reverse("prompts:label", args=[prompt.pk]), {"label": "production", "version": "2"})
    numbers = list(prompt.versions.order_by("number").values_list("number", flat=True))
    assert numbers == [1, 2, 3]
    assert list(PromptVersion.objects.filter(number=1).values()) == before
    v2, v3 = prompt.versions.get(number=2), prompt.versions.get(number=3)
    assert v2.params["temperature"] == 0.3 and v2.values["temperature"] == 0.3 and v2.message == "shorter"
    assert v3.restored_from == 1 and v3.template == before[0]["template"]


def test_parameters_are_typed_and_held_to_the_model(alice_client, alice):
    prompt = make_prompt(alice)
    response = _post_version(alice_client, prompt, temperature="7", thinking_budget="500")
    text = response.content.decode()
    assert response.status_code == 400
    assert "temperature: must be at most 2." in text
    assert "thinking_budget: local/chat does not take this parameter." in text
    assert prompt.versions.count() == 1


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"template": "Hello {{name"}, "template, line 1, column 7: “{{” is not closed by “}}”"),
        ({"template": "x" * 100_001}, "template: at most 100,000 characters"),
        ({"tools": '[{"type": "function", "function": {"name": "f"}}]'}, "tools: local/chat does not take tools"),
        ({"model": "acme/nothing"}, "model:"),
    ],
)
def test_bad_input_gets_words_and_saves_nothing(alice_client, alice, fields, words):
    prompt = make_prompt(alice)
    response = _post_version(alice_client, prompt, **fields)
    assert response.status_code == 400
    assert words in response.content.decode()
    assert prompt.versions.count() == 1


def test_a_nul_byte_is_refused(alice_client, alice):
    prompt = make_prompt(alice)
    response = _post_version(alice_client, prompt, system="a\x00b")
    assert response.status_code == 400 and "NUL" in response.content.decode()
    assert prompt.versions.count() == 1


def test_names_are_unique_per_owner(alice_client, alice, bob, team):
    make_prompt(alice, "summary")
    make_prompt(bob, "summary")  # another owner: the same name is fine
    make_prompt(alice, "summary", team=team)  # the team's library is another owner too
    data = {
        "name": "summary",
        "template": "Hi {{x}}",
        "connection": alice.connections.get(is_local=True).pk,
        "model": "local/chat",
    }
    response = alice_client.post(reverse("prompts:new"), data)
    assert response.status_code == 400
    assert "name: “summary” is already a prompt in your prompts" in response.content.decode()
    assert Prompt.objects.filter(owner=alice, team=None).count() == 1
    response = alice_client.post(reverse("prompts:new"), data | {"name": "other"})
    assert response.status_code == 302


def test_another_users_prompt_is_a_404(bob_client, alice):
    prompt = make_prompt(alice, "alices-private", versions=2)
    urls = [
        reverse("prompts:detail", args=[prompt.pk]),
        reverse("prompts:edit", args=[prompt.pk]),
        reverse("prompts:version", args=[prompt.pk, 1]),
        reverse("prompts:compare", args=[prompt.pk]) + "?a=1&b=2",
        reverse("prompts:export", args=[prompt.pk]),
        reverse("chat:from-prompt", args=[prompt.versions.get(number=1).pk]),
        reverse("sharing:code", args=["prompt", prompt.versions.get(number=1).pk]),
        reverse("sharing:source", args=["prompt", prompt.versions.get(number=1).pk]),
    ]
    for url in urls:
        assert bob_client.get(url).status_code == 404, url
    for name, args in [
        ("prompts:restore", [prompt.pk, 1]),
        ("prompts:label", [prompt.pk]),
        ("prompts:delete", [prompt.pk]),
    ]:
        assert bob_client.post(reverse(name, args=args), {"label": "production", "version": "1"}).status_code == 404
    assert prompt.versions.count() == 2 and not prompt.labels.exists()
    assert "alices-private" not in bob_client.get(reverse("prompts:index")).content.decode()


def test_a_team_member_sees_and_edits_the_teams_prompt(bob_client, alice, team):
    prompt = make_prompt(alice, "shared", team=team)
    assert bob_client.get(reverse("prompts:detail", args=[prompt.pk])).status_code == 200
    assert "shared" in bob_client.get(reverse("prompts:index")).content.decode()
    team_page = bob_client.get(reverse("teams:detail", args=[team.pk])).content.decode()
    assert f'href="{reverse("prompts:detail", args=[prompt.pk])}">shared</a>' in team_page
    response = bob_client.post(
        reverse("prompts:edit", args=[prompt.pk]),
        {
            "template": "Hi {{x}}",
            "connection": team.memberships.get(role="member").user.connections.get(is_local=True).pk,
            "model": "local/chat",
        },
    )
    assert response.status_code == 302
    assert prompt.versions.get(number=2).author.username == "bob"


def test_compare_shows_markers_and_words_not_colour_alone(alice_client, alice):
    prompt = make_prompt(alice)
    from playground.prompts.drafts import save_version

    save_version(prompt, draft(alice, template="Summarise {{topic}} briefly.", params={"temperature": 0.2}), alice)
    page = alice_client.get(reverse("prompts:compare", args=[prompt.pk]) + "?a=1&b=2").content.decode()
    assert "removed: </span>Summarise {{topic}} in {{n}} words." in page
    assert "added: </span>Summarise {{topic}} briefly." in page
    assert "&quot;temperature&quot;: 0.2" in page
    assert "changed: +1 −1" in page


def test_deleting_an_author_or_a_connection_keeps_the_versions(alice, bob, team):
    from playground.prompts.drafts import save_version
    from tests.factories import add_connection

    prompt = make_prompt(alice, "kept", team=team)
    hosted = add_connection(bob)
    save_version(prompt, draft(bob), bob)
    later = draft(bob)
    later.connection = hosted
    third = save_version(prompt, later, bob)
    hosted.delete()
    bob.delete()
    third = PromptVersion.objects.get(pk=third.pk)
    assert third.author is None and third.connection is None and third.template
    assert prompt.versions.count() == 3
