"""Graceful drain (playground/lib/drain.py): after a SIGTERM a process answers 503 to its readiness probe at once,
refuses new work, lets its answers finish, tells its sockets to reconnect and exits; a second SIGTERM (or the end of
the grace period) ends what is left as interrupted, with every word that arrived saved.

The first tests set the drain flag in this process; the others send real signals to their own daphne processes.
They run on both configurations (SQLite and the in-memory layer, or PostgreSQL and Redis)."""

import asyncio
import signal
import time

import httpx
import pytest
from django.test import Client
from django.urls import reverse

from playground.chat.models import Message
from playground.lib import drain
from tests.faults.conftest import local_conversation, logged_in
from tests.operations.tabs import Tab, cookie_of

STREAMING = Message.STREAMING


@pytest.fixture
def draining():
    drain.begin()
    yield
    drain.reset()


# ---------------------------------------------------------------- in this process


@pytest.mark.django_db
def test_the_readiness_probe_answers_503_at_once_while_draining(client, draining):
    response = client.get("/health/ready")
    assert response.status_code == 503
    assert response.json()["status"] == "draining"


@pytest.mark.django_db
def test_the_readiness_probe_is_ready_when_not_draining(client):
    assert client.get("/health/ready").status_code == 200


@pytest.mark.needs_local_api
@pytest.mark.django_db(transaction=True)
def test_a_send_while_draining_is_refused_in_words_and_saves_nothing(alice, catalog, draining):
    conversation = local_conversation(alice)
    client = Client(HTTP_HX_REQUEST="true")
    client.force_login(alice)
    response = client.post(reverse("chat:send", args=[conversation.pk]), data={"content": "hello there"})
    # A 503 the balancer may retry elsewhere; the page swaps it in (the header) with the typed text kept.
    assert response.status_code == 503 and response["X-Playground-Draining"] == "1"
    text = response.content.decode()
    assert "This server is restarting" in text and "hello there" in text
    assert not Message.objects.filter(conversation=conversation).exists()

    plain = Client()
    plain.force_login(alice)
    response = plain.post(reverse("chat:send", args=[conversation.pk]), data={"content": "hello"})
    assert response.status_code == 503 and response.json()["error"]["type"] == "draining"
    assert not Message.objects.filter(conversation=conversation).exists()


@pytest.mark.needs_local_api
@pytest.mark.django_db(transaction=True)
def test_over_the_socket_a_send_is_refused_naming_the_drain_and_a_new_socket_is_told_to_reconnect(alice, catalog):
    from channels.testing import WebsocketCommunicator

    from tests.chat.conftest import ORIGIN, application, connect

    conversation = local_conversation(alice)

    async def scenario():
        ws = await connect(conversation.pk, alice)  # open before the SIGTERM
        drain.begin()
        await ws.send_json_to({"action": "send", "id": "t1", "content": "hello there"})
        reply = await ws.receive_json_from(timeout=10)
        await ws.disconnect()
        late = WebsocketCommunicator(application, f"/ws/chat/{conversation.pk}/", headers=ORIGIN)
        late.scope["user"] = alice
        connected, _ = await late.connect()
        closed = await late.receive_output(timeout=5)
        return reply, connected, closed

    try:
        reply, connected, closed = asyncio.run(scenario())
    finally:
        drain.reset()
    # The page leaves this socket and sends the message again by its form POST (socket.js, composer.js).
    assert reply["type"] == "failed" and reply["problem"] == "draining" and "restarting" in reply["error"]
    assert not Message.objects.filter(conversation=conversation).exists()
    assert connected and closed == {"type": "websocket.close", "code": drain.RECONNECT}


@pytest.mark.django_db(transaction=True)
def test_an_evaluation_run_and_a_speech_clip_are_refused_while_draining(alice, draining):
    from playground.evaluate import runner, services
    from playground.evaluate.models import Evaluation
    from playground.speech import services as speech
    from playground.upstream.errors import UpstreamError

    evaluation = Evaluation(pk=123456)
    with pytest.raises(services.EvaluationError, match="restarting"):
        asyncio.run(runner.start(evaluation, [1], 1))
    with pytest.raises(UpstreamError) as refused:
        asyncio.run(speech.start_clip(owner=alice, connection=None, model="m", text="hello"))
    assert refused.value.status == 503 and "restarting" in refused.value.message


def test_the_drain_lets_every_kind_of_job_finish_and_cancels_what_outlasts_the_grace(draining, monkeypatch):
    from playground.lib import detached

    # Only this test's jobs, and a wake-up event of this test's loop: jobs other tests left in the registry belong to
    # event loops that are closed (cancelling them would fail), as would an event made on one of them.
    monkeypatch.setattr(detached, "_jobs", {})
    monkeypatch.setattr(drain, "_wake", None)
    ended = []

    async def job(name: str, seconds: float) -> None:
        try:
            await asyncio.sleep(seconds)
            ended.append(name)
        except asyncio.CancelledError:
            ended.append(f"{name} cancelled")
            raise

    async def scenario() -> float:
        for kind, key, seconds in (("speech", 1, 0.2), ("evaluate", 2, 0.4), ("localbatch", "b1", 60)):
            task = asyncio.create_task(job(kind, seconds))
            detached.track(kind, key, task)
            task.add_done_callback(lambda t, kind=kind, key=key: detached.untrack(kind, key, t))
        started = time.monotonic()
        await drain.drain(grace=1.0)
        return time.monotonic() - started

    took = asyncio.run(scenario())
    assert ended == ["speech", "evaluate", "localbatch cancelled"]
    assert 1.0 <= took < 4
    assert drain.work() == []


# ---------------------------------------------------------------- real processes, real signals


def _send(http: httpx.Client, conversation, content: str) -> Message:
    response = http.post(reverse("chat:send", args=[conversation.pk]), data={"content": content})
    assert response.status_code == 200, response.text
    return Message.objects.get(conversation=conversation, role="assistant")


def _ready_status(server) -> int:
    return httpx.get(f"{server.url}/health/ready", timeout=5).status_code


def _tab(server, alice, conversation, answer) -> Tab:
    client = Client()
    client.force_login(alice)
    host = server.url.removeprefix("http://")
    return Tab(host, cookie_of(client.cookies["sessionid"].value), conversation.pk, answer.pk)


async def _following(tab: Tab) -> asyncio.Task:
    task = asyncio.create_task(tab.follow(timeout=60))
    await asyncio.wait_for(tab.opened.wait(), 10)
    await asyncio.sleep(0.3)  # its snapshot asked
    return task


@pytest.mark.needs_local_api
@pytest.mark.django_db(transaction=True)
def test_a_sigterm_lets_the_answer_finish_then_tells_the_tab_to_reconnect_and_exits(alice, servers):
    conversation = local_conversation(alice)
    server = servers(LOCAL_API_TOKEN_RATE="150", PLAYGROUND_DRAIN_SECONDS="30")
    with logged_in(alice, server) as http:
        answer = _send(http, conversation, "write 300 words about rivers")
    tab = _tab(server, alice, conversation, answer)
    other = local_conversation(alice)
    second = logged_in(alice, server)

    async def scenario():
        following = await _following(tab)
        server.process.send_signal(signal.SIGTERM)
        signalled = time.monotonic()
        # The probe says 503 at once, while the answer goes on.
        statuses = []
        while time.monotonic() - signalled < 0.5:
            statuses.append(await asyncio.to_thread(_ready_status, server))
        assert statuses and set(statuses) == {503}, statuses
        # A new send is refused in words (nothing saved); the page would send it again elsewhere.
        with second as http:
            refused = await asyncio.to_thread(
                http.post, reverse("chat:send", args=[other.pk]), data={"content": "one more"}
            )
        assert refused.status_code == 503 and "restarting" in refused.text
        await following
        return signalled

    signalled = asyncio.run(scenario())
    assert server.process.wait(timeout=15) == 0 or server.process.returncode in (0, -signal.SIGTERM)
    ended = time.monotonic() - signalled
    answer.refresh_from_db()
    assert answer.status == Message.COMPLETE, answer.status
    # The tab saw every word, then its socket was told to reconnect (the answer had ended first).
    assert tab.status == Message.COMPLETE and tab.text == answer.content and not tab.diverged
    assert 0.5 < ended < 30
    assert not Message.objects.filter(conversation__owner=alice, status=STREAMING).exists()


@pytest.mark.needs_local_api
@pytest.mark.django_db(transaction=True)
def test_the_socket_is_closed_with_the_reconnect_code_once_the_work_is_done(alice, servers):
    import websockets

    conversation = local_conversation(alice)
    server = servers(PLAYGROUND_DRAIN_SECONDS="5")
    client = Client()
    client.force_login(alice)
    host = server.url.removeprefix("http://")

    async def scenario():
        async with websockets.connect(
            f"ws://{host}/ws/chat/{conversation.pk}/",
            additional_headers={"Cookie": cookie_of(client.cookies["sessionid"].value), "Origin": f"http://{host}"},
        ) as ws:
            server.process.send_signal(signal.SIGTERM)
            with pytest.raises(websockets.exceptions.ConnectionClosed):
                await asyncio.wait_for(ws.recv(), 10)
            return ws.close_code

    assert asyncio.run(scenario()) == drain.RECONNECT
    assert server.process.wait(timeout=10) is not None


@pytest.mark.needs_local_api
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("ending", ["second SIGTERM", "grace period"])
def test_what_is_left_at_the_end_ends_interrupted_with_every_word_that_arrived(alice, servers, ending):
    conversation = local_conversation(alice)
    grace = "60" if ending == "second SIGTERM" else "2"
    server = servers(LOCAL_API_TOKEN_RATE="60", PLAYGROUND_DRAIN_SECONDS=grace)
    with logged_in(alice, server) as http:
        answer = _send(http, conversation, "write 3000 words about rivers")
    tab = _tab(server, alice, conversation, answer)

    async def scenario():
        following = await _following(tab)
        server.process.send_signal(signal.SIGTERM)
        await asyncio.sleep(1.5)
        assert server.process.poll() is None, "the process did not wait for its answer"
        if ending == "second SIGTERM":
            server.process.send_signal(signal.SIGTERM)
        await following

    started = time.monotonic()
    asyncio.run(scenario())
    server.process.wait(timeout=15)
    assert time.monotonic() - started < 12
    answer.refresh_from_db()
    assert answer.status == Message.INTERRUPTED
    # Everything the tab was shown is saved: the words after the last once-a-second flush too.
    assert tab.status == Message.INTERRUPTED and tab.text == answer.content and answer.content
    assert not tab.diverged


@pytest.mark.django_db(transaction=True)
def test_a_process_with_nothing_to_do_exits_at_once_on_sigterm(servers):
    server = servers(PLAYGROUND_DRAIN_SECONDS="30")
    started = time.monotonic()
    server.process.send_signal(signal.SIGTERM)
    server.process.wait(timeout=10)
    assert time.monotonic() - started < 5
