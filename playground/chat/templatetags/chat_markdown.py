"""{{ text|markdown }}: model output as sanitized HTML (lib/markdown/rendering.py), for pages outside the chat."""

from django import template
from django.utils.safestring import mark_safe

from playground.lib.markdown.rendering import render_markdown

register = template.Library()


@register.filter
def markdown(text):
    return mark_safe(render_markdown(text or ""))  # noqa: S308 - sanitized by nh3 in render_markdown
