"""Small hooks other apps' templates use: a Share button, the delete confirmation's list of links, "N watching"."""

from django import template
from django.urls import reverse

from playground.sharing.models import Share, watching

register = template.Library()


@register.simple_tag
def share_url(source) -> str:
    kind = {"Conversation": "conversation", "RerankRun": "rerank", "SpeechClip": "speech", "Batch": "batch"}
    return reverse("sharing:source", args=[kind[type(source).__name__], source.pk])


@register.simple_tag
def links_note(source) -> str:
    """What a delete also deletes: this source's share links, named (for a data-confirm text)."""
    shares = list(Share.objects.for_source(source).only("title", "token", "visibility", "views"))
    if not shares:
        return ""
    names = "\n".join(f"· /s/{s.token[:8]}… ({s.get_visibility_display().lower()}, {s.views} views)" for s in shares)
    return f"\n\nIts {len(shares)} share link{'s' * (len(shares) != 1)} will stop working:\n{names}"


@register.inclusion_tag("sharing/_watching.html")
def watching_badge(conversation) -> dict:
    """How many follow this conversation live; polled only while it has a live link."""
    followed = Share.objects.filter(conversation=conversation, live=True).exists()
    return {"conversation": conversation, "count": watching(conversation.pk) if followed else 0, "poll": followed}
