"""A new chat: no second blank conversation per click, and the connection and model last used."""

from playground.chat.models import Conversation


def last_used(user) -> Conversation | None:
    """The user's conversation most recently answered with a model (its connection and model start new chats)."""
    return (
        Conversation.objects.for_user(user)
        .exclude(model_id="")
        .filter(messages__role="assistant")
        .order_by("-updated", "-pk")
        .first()
    )


def new_conversation(user) -> Conversation:
    """The conversation a "New chat" or a first message starts: the user's blank one when there is one (no
    messages, title or system prompt), so New chat clicks do not pile up empty conversations; otherwise a new,
    unsaved one. A conversation without a model yet takes the connection and model last used."""
    blank = (
        Conversation.objects.for_user(user)
        .filter(messages__isnull=True, title="", system_prompt="")
        .order_by("-updated", "-pk")
        .first()
    )
    conversation = blank or Conversation(owner=user)
    if not conversation.model_id and (last := last_used(user)) is not None:
        conversation.connection_id, conversation.model_id = last.connection_id, last.model_id
    return conversation
