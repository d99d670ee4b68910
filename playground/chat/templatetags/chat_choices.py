"""{% other_choices message as choices %}: the choices after the first of an n > 1 answer (chat/choices.py)."""

from django import template

from playground.chat import choices

register = template.Library()


@register.simple_tag
def other_choices(message):
    return choices.other_choices(message) if message.role == "assistant" else []
