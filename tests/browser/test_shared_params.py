"""Issue 37.6: a shared conversation's parameters read as JSON (true, false and the tools' JSON), which wraps
inside the page at desktop and phone widths. Writes the screenshots."""

import pytest
from playwright.sync_api import expect

from playground.chat.models import Conversation
from playground.sharing.freeze import freeze
from playground.sharing.models import Share
from tests.browser.conftest import orm, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "tide_table",
            "description": "High and low water for a harbour on a date",
            "parameters": {"type": "object", "properties": {"harbour": {"type": "string"}}},
        },
    }
]


@pytest.mark.parametrize("width", [1440, 390])
def test_shared_parameters_read_as_json(page, alice, width):
    def make():
        conversation = Conversation.objects.create(
            owner=alice, title="Tides", model_id="local/chat", params={"stream": True, "seed": 7, "tools": TOOLS}
        )
        share = Share.objects.create(owner=alice, source=conversation, title="Tides")
        freeze(share)
        return share

    share = orm(make)
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(f"/s/{share.token}/")
    setup = page.locator(".share-setup")
    expect(setup.locator("dd").filter(has_text="true")).to_have_text("true")
    expect(setup).to_contain_text('[{"type": "function", "function": {"name": "tide_table"')
    expect(setup).not_to_contain_text("True")
    screenshot(page, f"sharing-params-json-{width}")
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
