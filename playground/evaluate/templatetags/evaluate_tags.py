from django import template
from django.utils.safestring import mark_safe

from playground.lib.markdown.rendering import render_markdown

register = template.Library()


@register.filter
def markdown(text: str) -> str:
    """Model output as sanitized HTML (the chat's renderer: raw HTML off, then nh3)."""
    return mark_safe(render_markdown(text or ""))  # noqa: S308 - sanitized by nh3


@register.filter
def get_item(mapping, key):
    return mapping.get(key, "") if isinstance(mapping, dict) else ""


@register.filter
def ms(value) -> str:
    if value is None:
        return "—"
    return f"{value / 1000:.2f} s" if value >= 1000 else f"{round(value)} ms"


@register.filter
def num(value) -> str:
    return "—" if value is None else f"{value:.0f}"
