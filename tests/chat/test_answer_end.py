"""The end of an answer: its last words reach the tabs before the final save and render (issue 24)."""

import pytest
from asgiref.sync import sync_to_async

from playground.chat import services
from playground.chat.relay.generation import Generation
from tests.chat.conftest import connect, receive_until_final

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]


async def test_the_last_words_are_published_before_the_final_save(live_server, alice, make_conversation, monkeypatch):
    at_save = {}
    save = Generation._finish

    async def finish(self, status, error):
        at_save.update(published=self.published_seq, received=self.seq)
        return await save(self, status, error)

    monkeypatch.setattr(Generation, "_finish", finish)
    conversation = await sync_to_async(make_conversation)()
    ws = await connect(conversation.pk, alice)
    # Tokens a little apart: the last ones arrive while the publisher waits out its frame.
    turn = await services.send(conversation, "write 120 words about rivers", headers={"X-Local-Token-Rate": "2000"})
    events = await receive_until_final(ws, turn.assistant.pk)
    await ws.disconnect()

    assert at_save["published"] == at_save["received"]
    deltas = [e for e in events if e["type"] == "delta"]
    assert deltas[-1]["seq"] == at_save["received"] and events[-1]["type"] == "done"
