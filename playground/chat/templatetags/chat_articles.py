"""{% article message %}: one message of the thread (chat/_message.html), remembered once finished (render_cache);
{% compare_params form model %}: a compare column's parameter fields, remembered per model."""

from django import template

from playground.chat import render_cache

register = template.Library()


@register.simple_tag(takes_context=True)
def article(context, message):
    return render_cache.article(message, context.get("csrf_token"))


@register.simple_tag
def compare_params(form, model):
    return render_cache.compare_params(form, model)


@register.simple_tag(takes_context=True)
def connection_notice(context, conversation):
    """The conversation page's notice when its team connection was revoked or removed, with the connections it may
    switch to; None otherwise."""
    from playground.chat import services
    from playground.connections.models import Connection, ensure_local_connection

    user = context["request"].user
    if conversation is None or (text := services.connection_notice(conversation, user)) is None:
        return None
    ensure_local_connection(user)
    return {"text": text, "connections": list(Connection.objects.for_user(user))}


@register.simple_tag(takes_context=True)
def message_prototypes(context, conversation):
    """The articles the page builds itself after a send over the socket (chat/prototypes.py)."""
    from playground.chat.prototypes import prototypes

    return prototypes(conversation, context.get("csrf_token"))
