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


@register.filter
def rating_of(cell, user):
    """The user's rating of the cell (None: not rated, or a cell no run has made yet)."""
    if cell is None or cell.pk is None or not getattr(user, "is_authenticated", False):
        return None
    return next((r for r in cell.ratings.all() if r.rater_id == user.pk), None)


@register.filter
def others_ratings(cell, user):
    """The other people's ratings of the cell."""
    if cell is None or cell.pk is None:
        return []
    return [r for r in cell.ratings.all() if r.rater_id != getattr(user, "pk", None)]


@register.filter
def percent(value) -> str:
    return "—" if value is None else f"{value:.0f}%"


@register.filter
def signed(value, digits: int = 0) -> str:
    if value is None:
        return "—"
    return f"{value:+.{digits}f}"
