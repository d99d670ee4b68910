from django.test import Client

from playground.prompts.drafts import check_draft, save_version
from playground.prompts.models import Prompt


def draft(user, **fields):
    data = {"system": "You are terse.", "template": "Summarise {{topic}} in {{n}} words.", "model": "local/chat"}
    data |= fields
    result, errors = check_draft(user, data)
    assert not errors, errors
    return result


def make_prompt(user, name="summary", team=None, versions=1, **fields):
    prompt = Prompt.objects.create(owner=user, team=team, name=name)
    for number in range(versions):
        save_version(prompt, draft(user, message=f"v{number + 1}", **fields), user)
    return prompt


def client_of(user) -> Client:
    client = Client()
    client.force_login(user)
    return client
