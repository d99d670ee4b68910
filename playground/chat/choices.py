"""n > 1: the other choices of an answer, shown as tabs beside the first, and "continue with this one".

The first choice is the message's content, the thread's answer; the others are in `Message.choices` (in order of
their index). Continuing with choice k swaps it with the content, so the next request sends it as the answer:
the former answer stays among the choices, in k's place.
"""

from django.db import transaction
from django.http import Http404, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from playground.chat.models import Message, get_conversation
from playground.chat.relay.display import render_message
from playground.lib.markdown.rendering import render_markdown


def choice_count(message: Message) -> int:
    """How many choices the answer has or will have (the request's n, or what arrived)."""
    params = message.params if isinstance(message.params, dict) else {}
    n = params.get("n")
    n = n if isinstance(n, int) and not isinstance(n, bool) else 1
    return max(n, len(message.choices or []) + 1)


def other_choices(message: Message) -> list[dict]:
    """The choices after the first, numbered from 2, with their sanitized HTML (empty until they arrive)."""
    texts = [text if isinstance(text, str) else "" for text in (message.choices or [])]
    texts += [""] * (choice_count(message) - 1 - len(texts))
    return [{"number": i + 2, "text": text, "html": render_markdown(text)} for i, text in enumerate(texts)]


def choose(message: Message, number: int) -> Message:
    """Make choice `number` (2…n) the thread's answer; the former answer takes its place among the choices."""
    with transaction.atomic():
        message = Message.objects.select_for_update().get(pk=message.pk)
        choices = list(message.choices or [])
        if message.status == Message.STREAMING or not 2 <= number <= len(choices) + 1:
            raise ValueError(f"choice: pick one of 2 to {len(choices) + 1} of a finished answer")
        message.content, choices[number - 2] = choices[number - 2], message.content
        message.choices = choices
        message.save(update_fields=["content", "choices"])
    return message


@require_POST
def continue_with(request, pk, mid, number):
    conversation = get_conversation(request, pk)
    message = conversation.messages.filter(pk=mid, role="assistant").first()
    if message is None:
        raise Http404("No such answer.")
    try:
        message = choose(message, number)
    except ValueError as exc:
        return HttpResponse(str(exc), status=409)
    if not request.htmx:
        return redirect("chat:conversation", pk=pk)
    return HttpResponse(render_message(message))
