"""A live viewer on another process keeps the owner's thread through every branch operation (Chromium): regenerate,
switch, edit, insert, delete, compare and pick, against the local API and the independent fake provider."""

import os

import pytest
from asgiref.sync import async_to_sync
from playwright.sync_api import expect

from playground.catalog.services import refresh_models
from playground.chat import branches
from playground.chat.models import Conversation, Message
from playground.sharing.freeze import freeze
from playground.sharing.models import Share
from tests.browser.conftest import orm, orm_eventually
from tests.conftest import free_port, start_server, stop_server
from tests.fakeprovider import server as fake
from tests.providers.conftest import fake_connection

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.needs_local_api,
    pytest.mark.skipif(
        not os.environ.get("REDIS_URL") or "postgres" not in os.environ.get("DATABASE_URL", ""),
        reason="needs REDIS_URL and DATABASE_URL on PostgreSQL: two daphne processes share a layer and a database",
    ),
]

VIEWER_IDS = "() => Array.from(document.querySelectorAll('#share-thread .message'), n => Number(n.dataset.messageId))"


@pytest.fixture
def second_server(live_server, tmp_path):
    port = free_port()
    log = tmp_path / "second.log"
    process = start_server(port, log)
    yield f"127.0.0.1:{port}"
    stop_server(process)
    if os.environ.get("SHOW_SERVER_LOG"):
        print(log.read_text(errors="replace"))


def _conversation(open_chat, connection=None, model_id="local/chat"):
    page = open_chat()
    conversation = orm(Conversation.objects.get)

    def build():
        if connection is not None:  # the independent fake provider answers the regenerate and the edit
            Conversation.objects.filter(pk=conversation.pk).update(connection=connection, model_id=model_id)
        rows = [
            Message.objects.create(conversation=conversation, role=role, content=text, status=Message.COMPLETE)
            for role, text in [("user", "Say hello"), ("assistant", "Hello!"), ("user", "Bye?"), ("assistant", "Bye!")]
        ]
        for row in branches.link_linear(rows):
            row.save()
        return rows

    return page, conversation, orm(build)


def _fake(request, owner):
    fake_openai = request.getfixturevalue("fake_openai")

    def connect():
        connection = fake_connection(owner, fake_openai)
        message, ok = async_to_sync(refresh_models)(connection)
        assert ok, message
        return connection

    return orm(connect)


@pytest.mark.parametrize("provider", ["local", "fake"])
def test_a_live_viewer_on_another_process_keeps_the_owners_thread(
    request, provider, alice, open_chat, browser, second_server
):
    connection = _fake(request, alice) if provider == "fake" else None
    model_id = fake.CHAT_MODEL if provider == "fake" else "local/chat"
    page, conversation, (u1, a1, u2, a2) = _conversation(open_chat, connection, model_id)
    share = orm(lambda: Share.objects.create(owner=conversation.owner, source=conversation, title="t", live=True))
    orm(freeze, share)
    csrf = next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken")

    def owner(path: str, **form):
        response = page.request.post(path, form=form, headers={"X-CSRFToken": csrf, "HX-Request": "true"})
        assert response.status == 200, response.text()

    def owners_thread() -> list[int]:
        return [m.pk for m in branches.thread(Conversation.objects.get(pk=conversation.pk))]

    def settled() -> list[int]:
        """The owner's thread once no answer on it is still streaming."""
        rows = orm_eventually(
            lambda: branches.thread(Conversation.objects.get(pk=conversation.pk)),
            lambda rows: all(m.status != Message.STREAMING for m in rows),
            timeout=30,
        )
        return [m.pk for m in rows]

    viewer_context = browser.new_context(base_url=f"http://{second_server}")
    viewer_context.set_default_timeout(15_000)
    try:
        viewer = viewer_context.new_page()
        viewer.goto(f"/s/{share.token}/")
        viewer.wait_for_function("() => document.getElementById('share-thread').dataset.live === 'open'")
        assert viewer.evaluate(VIEWER_IDS) == [u1.pk, a1.pk, u2.pk, a2.pk]

        def viewer_shows(ids: list[int]) -> None:
            viewer.wait_for_function(f"ids => JSON.stringify(({VIEWER_IDS})()) === JSON.stringify(ids)", arg=ids)

        base = f"/c/{conversation.pk}/messages"
        owner(f"{base}/{a1.pk}/regenerate/")  # the thread is [u1, a1'] now: u2 and a2 are on another branch
        regenerated = settled()
        assert regenerated[:1] == [u1.pk] and len(regenerated) == 2
        viewer_shows(regenerated)
        expect(viewer.locator(f"#message-{regenerated[1]}")).to_have_attribute("data-status", "complete")

        owner(f"{base}/{a1.pk}/switch/")  # back to the first answer: u2 and a2 come back, in order
        viewer_shows(orm(owners_thread))
        assert viewer.evaluate(VIEWER_IDS) == [u1.pk, a1.pk, u2.pk, a2.pk]

        owner(f"{base}/{u2.pk}/edit/", content="Farewell?")
        edited = settled()
        viewer_shows(edited)
        expect(viewer.locator(f"#message-{edited[2]}")).to_contain_text("Farewell?")

        owner(f"/c/{conversation.pk}/insert/", after=str(a1.pk), role="user", content="An aside")
        inserted = orm(owners_thread)
        assert len(inserted) == 5
        viewer_shows(inserted)

        owner(f"{base}/{inserted[2]}/delete/")
        viewer_shows(orm(owners_thread))
        assert viewer.evaluate(VIEWER_IDS) == edited
        if provider == "fake":  # the regenerate and the edit's answer were the fake provider's
            sent = request.getfixturevalue("fake_openai").state.requests
            assert len([r for r in sent if r["path"].endswith("/chat/completions")]) == 2

        # Compare two columns (the first is on the thread), then continue with the second.
        owner(f"/c/{conversation.pk}/compare/", content="Which is better?", model_1=model_id, model_2=model_id)
        compared = settled()
        viewer_shows(compared)
        columns = orm(
            lambda: list(Message.objects.filter(parent_id=compared[-2]).order_by("pk").values_list("pk", flat=True))
        )
        assert len(columns) == 2 and compared[-1] == columns[0]
        owner(f"{base}/{columns[1]}/pick/")
        picked = orm(owners_thread)
        assert picked == [*compared[:-1], columns[1]]
        viewer_shows(picked)
    finally:
        viewer_context.close()
