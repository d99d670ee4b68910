"""{% article message %}: one message of the thread (chat/_message.html), remembered once finished (render_cache)."""

from django import template

from playground.chat import render_cache

register = template.Library()


@register.simple_tag(takes_context=True)
def article(context, message):
    return render_cache.article(message, context.get("csrf_token"))
