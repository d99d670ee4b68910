import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from playground.chat.models import Attachment, Conversation, Message, attachment_name
from playground.connections.models import Connection, ensure_local_connection
from playground.evaluate import services
from playground.evaluate.models import Cell, Evaluation, Rating, Run, TestCase, Variant
from playground.rerank.models import RerankRun
from playground.sharing.freeze import freeze
from playground.sharing.models import Share

SECRET_KEY_VALUE = "sk-secret-provider-key-0123456789"
CONNECTION_NAME = "Acme Secret Gateway"
BASE_URL = "https://gateway.acme-internal.example/v1"
AUDIO = bytes(range(256)) * 40  # 10,240 bytes


@pytest.fixture
def hosted(alice, catalog):
    """A hosted connection of alice's with a key, a name and a base URL that must never show in a share."""
    connection = Connection(owner=alice, name=CONNECTION_NAME, base_url=BASE_URL)
    connection.set_key(SECRET_KEY_VALUE)
    connection.save()
    return connection


@pytest.fixture
def conversation(alice, hosted):
    conversation = Conversation.objects.create(
        owner=alice,
        connection=hosted,
        title="Tides and the moon",
        system_prompt="You are a careful physics tutor.",
        model_id="local/chat",
        params={"temperature": 0.3, "max_tokens": 200},
    )
    user = Message.objects.create(conversation=conversation, role="user", content="Why are there two tides a day?")
    name = default_storage.save(attachment_name(alice.pk, "tone.wav"), ContentFile(AUDIO))
    Attachment.objects.create(
        message=user, file=name, kind="audio", content_type="audio/wav", name="tone.wav", size=len(AUDIO)
    )
    Message.objects.create(
        conversation=conversation,
        role="assistant",
        content="Because **the Earth** rotates under two bulges.",
        model_id="local/chat",
        params={"temperature": 0.3, "max_tokens": 200, "stream": True},
        usage={"prompt_tokens": 12, "completion_tokens": 9},
        trace_id="trace-abc",
    )
    yield conversation
    for attachment in Attachment.objects.filter(message__conversation__owner=alice):
        default_storage.delete(attachment.file.name)


@pytest.fixture
def make_share(alice):
    def make(source, **fields):
        share = Share(owner=source.owner, kind=_kind(source), title="x", **fields)
        share.source = source
        share.save()
        freeze(share)
        return share

    yield make
    for share in Share.objects.all():
        share.delete()  # removes the frozen copies


def _kind(source) -> str:
    return {
        "Conversation": "conversation",
        "RerankRun": "rerank",
        "SpeechClip": "speech",
        "Batch": "batch",
        "Evaluation": "evaluation",
    }[type(source).__name__]


@pytest.fixture
def rerank_pair(alice):
    connection = ensure_local_connection(alice)
    documents = ["the moon pulls the sea", "bread recipes", "tides follow the moon"]
    base = RerankRun.objects.create(
        owner=alice,
        connection=connection,
        model="local/rerank",
        query="what causes tides",
        documents=documents,
        params={"top_n": 3},
        results=[{"index": 0, "relevance_score": 0.9}, {"index": 2, "relevance_score": 0.8}],
        trace_id="trace-a",
    )
    other = RerankRun.objects.create(
        owner=alice,
        connection=connection,
        model="local/rerank-lite",
        query="what causes tides",
        documents=documents,
        params={"top_n": 3},
        results=[{"index": 2, "relevance_score": 0.95}, {"index": 0, "relevance_score": 0.7}],
        trace_id="trace-b",
        compared_to=base,
    )
    return base, other


ROWS = 60  # more than one page of 50


@pytest.fixture
def evaluation(alice, hosted):
    evaluation = Evaluation.objects.create(owner=alice, title="Capitals", connection=hosted, columns=["country"])
    services.new_version(evaluation, system="Answer briefly.", user="Capital of {{country}}?")
    a = Variant.objects.create(
        evaluation=evaluation,
        position=0,
        model="local/chat",
        params={"temperature": "0.2", "top_p": ""},
        graders={"contains": ""},
    )
    b = Variant.objects.create(evaluation=evaluation, position=1, model="local/chat-lite", params={"max_tokens": "64"})
    run = Run.objects.create(evaluation=evaluation, number=1, started_by=alice, status=Run.DONE)
    for n in range(ROWS):
        case = TestCase.objects.create(evaluation=evaluation, position=n, values={"country": f"Land{n}"}, expected="X")
        cell = Cell.objects.create(
            evaluation=evaluation,
            run=run,
            case=case,
            variant=a,
            status=Cell.DONE,
            output=f"**City{n}** <script>alert(1)</script>",
            grades={"contains": {"pass": n % 2 == 0, "detail": ""}},
            latency_ms=1200,
        )
        if n == 0:
            Rating.objects.create(cell=cell, rater=alice, passed=True, comment="spot on")
        Cell.objects.create(
            evaluation=evaluation, run=run, case=case, variant=b, status=Cell.ERROR, error=f"Timed out on row {n}"
        )
    return evaluation
