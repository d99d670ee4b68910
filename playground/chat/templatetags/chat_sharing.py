"""The conversation's share hooks in the chat page: "N watching" and the presenter strip."""

from django import template

from playground.catalog.params import set_params
from playground.sharing.models import Share, watching

register = template.Library()


@register.inclusion_tag("chat/sharing/_watching.html")
def watching_badge(conversation, shares=None) -> dict:
    """How many follow this conversation live; polled only while it has a live link (`shares`: its links, as the
    page read them with `shares_of`)."""
    if shares is None:
        followed = Share.objects.for_source(conversation).filter(live=True).exists()
    else:
        followed = any(share.live for share in shares)
    return {"conversation": conversation, "count": watching(conversation) if followed else 0, "poll": followed}


@register.inclusion_tag("chat/sharing/_presenter_strip.html")
def presenter_strip(conversation) -> dict:
    params = {k: v for k, v in set_params(conversation.params).items() if k != "tools"}
    return {"conversation": conversation, "params": params}
