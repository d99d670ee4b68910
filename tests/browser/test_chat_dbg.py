import json
import pytest
from tests.browser.test_chat import open_chat, send  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_dbg(open_chat):
    page = open_chat()
    log = []
    def on_ws(ws):
        ws.on("framereceived", lambda payload: log.append(("in", str(payload)[:200])))
        ws.on("framesent", lambda payload: log.append(("out", str(payload)[:200])))
        ws.on("close", lambda _: log.append(("close",)))
    page.on("websocket", on_ws)
    page.on("console", lambda m: log.append(("console", m.text)))
    page.reload()
    page.wait_for_timeout(500)
    answer = send(page, "Write 100 words about rivers")
    page.wait_for_timeout(6000)
    from playground.chat.models import Message
    for m in Message.objects.all():
        print(m.pk, m.role, m.status, m.seq, len(m.content), m.error)
    for entry in log[:8] + log[-8:]:
        print(entry)
    print(len(log))
