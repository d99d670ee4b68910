"""The page's side of a graceful drain (playground/lib/drain.py): a socket closed with 4012 ("this process is
restarting") comes back at once, without the connection banner, and the answer it was following goes on to the
end as saved. The server's close is played by Playwright's websocket routing, in front of the live server."""

import pytest
from playwright.sync_api import expect

from playground.chat.models import Message
from playground.lib.drain import RECONNECT
from tests.browser.conftest import orm

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]


@pytest.mark.parametrize("width", [1440, 390])
def test_a_socket_closed_for_a_restart_reconnects_at_once_and_the_answer_goes_on(open_chat, alice, width):
    sockets = []

    def route(ws):
        ws.connect_to_server()  # frames pass both ways as they are
        sockets.append(ws)

    page = open_chat()
    page.set_viewport_size({"width": width, "height": 860})
    page.route_web_socket("**/ws/chat/**", route)
    page.reload()  # the page's socket now goes through the route
    page.wait_for_function("() => window.ChatClient !== undefined")
    expect(page.locator("#connection-banner")).to_be_hidden()
    page.wait_for_timeout(300)
    assert len(sockets) == 1

    box = page.get_by_role("textbox", name="Message")
    box.fill("Write 200 words about rivers")
    box.press("Enter")
    answer = page.locator('article[data-role="assistant"]').last
    expect(answer).to_have_attribute("data-status", "streaming")
    expect(answer.locator(".message-body")).not_to_be_empty()

    sockets[0].close(code=RECONNECT, reason="restarting")
    # Back within a moment (100-300 ms), with no banner for the handover.
    for _ in range(40):
        if len(sockets) == 2:
            break
        page.wait_for_timeout(50)
    assert len(sockets) == 2, "the page did not reconnect within 2 s"
    expect(page.locator("#connection-banner")).to_be_hidden()

    expect(answer).to_have_attribute("data-status", "complete", timeout=60_000)
    message_id = int(answer.get_attribute("data-message-id"))
    saved = orm(lambda: Message.objects.get(pk=message_id))
    assert saved.status == Message.COMPLETE
    shown = answer.locator(".message-body").inner_text()
    page.reload()
    assert page.locator(f"#message-{message_id} .message-body").inner_text() == shown
