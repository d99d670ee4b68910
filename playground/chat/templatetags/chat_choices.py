"""{% other_choices message as choices %}: the choices after the first of an n > 1 answer (chat/choices.py);
{% message_meta message as meta %}: a finished answer's footer rows (chat/meta.py)."""

from django import template

from playground.chat import choices
from playground.chat.meta import meta_of

register = template.Library()


@register.simple_tag
def other_choices(message):
    return choices.other_choices(message) if message.role == "assistant" else []


@register.simple_tag
def message_meta(message):
    """{% message_meta message as meta %}: the rows of a finished answer's footer (chat/meta.py), or None."""
    return meta_of(message)
