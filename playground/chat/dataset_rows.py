"""Rows for a dataset (datasets/sources.py) from a chat turn of the user's and from a turn of a shared
conversation the viewer may open: the answer's question (the nearest user message before it) as the input, the
answer as the expected output."""

from django.http import Http404

from playground.chat.models import Conversation, Message
from playground.datasets.sources import Row, source
from playground.sharing.models import get_public_share


def _number(text: str) -> int:
    if not text.isdigit():
        raise Http404("No such message.")
    return int(text)


@source("chat-turn", "a chat turn")
def chat_turn(request, ref: str) -> Row:
    answers = Message.objects.filter(conversation__in=Conversation.objects.for_user(request.user), role="assistant")
    answer = answers.select_related("conversation").filter(pk=_number(ref)).first()
    if answer is None:
        raise Http404("No such answer.")
    question = answer.parent
    while question is not None and question.role != "user":
        question = question.parent
    return Row(
        values={"input": question.content if question else ""},
        expected=answer.content,
        name=answer.conversation.display_title,
    )


@source("shared-turn", "a shared conversation")
def shared_turn(request, ref: str) -> Row:
    """`ref` is "<token>:<message id>"; the messages are the ones the viewer sees on the shared page."""
    token, _, message_id = ref.rpartition(":")
    share = get_public_share(token, request.user)
    if share.kind != "conversation":
        raise Http404("Not a shared conversation.")
    content = share.declared_kind.show(share, dict(share.content), request)
    wanted = _number(message_id)
    question = ""
    for message in content.get("messages", []):
        if message["role"] == "user":
            question = message["content"]
        elif message["id"] == wanted and message["role"] == "assistant":
            return Row(values={"input": question}, expected=message["content"], name=share.title)
    raise Http404("No such answer in this shared conversation.")
