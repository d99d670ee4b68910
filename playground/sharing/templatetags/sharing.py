"""Small hooks other apps' templates use: a Share button, the delete confirmation's list of links, presenter view."""

from django import template
from django.templatetags.static import static
from django.urls import reverse
from django.utils.html import format_html

from playground.sharing import kinds
from playground.sharing.models import Share

register = template.Library()


@register.simple_tag
def share_url(source) -> str:
    return reverse("sharing:source", args=[kinds.of(source).name, source.pk])


@register.simple_tag
def shares_of(source) -> list[Share]:
    """This source's share links, read once for all the hooks of one page that show them (`links_note`, ...)."""
    return list(Share.objects.for_source(source).only("title", "token", "visibility", "views", "live"))


@register.simple_tag
def links_note(source, shares=None) -> str:
    """What a delete also deletes: this source's share links, named (for a data-confirm text); `shares`: as
    `shares_of` read them."""
    if shares is None:
        shares = shares_of(source)
    if not shares:
        return ""
    names = "\n".join(f"· /s/{s.token[:8]}… ({s.get_visibility_display().lower()}, {s.views} views)" for s in shares)
    return f"\n\nIts {len(shares)} share link{'s' * (len(shares) != 1)} will stop working:\n{names}"


# ---------------------------------------------------------------- presenter view


@register.simple_tag(takes_context=True)
def presenter_assets(context) -> str:
    """The presenter view's stylesheet and keyboard shortcuts (they act only on a page in presenter mode)."""
    return format_html(
        '<link rel="stylesheet" href="{}"><script src="{}" defer></script>',
        static("css/presenter.css"),
        static("js/presenter.js"),
    )


@register.simple_tag(takes_context=True)
def present_link(context, size: str = "") -> str:
    request = context["request"]
    query = request.GET.copy()
    presenting = bool(query.pop("present", None))
    if not presenting:
        query["present"] = "1"
    href = f"{request.path}?{query.urlencode()}" if query else request.path
    label = "Exit presenter" if presenting else "Present"
    title = "Back to the normal view (Alt+X)" if presenting else "Full width, large type, for a projector"
    return format_html(
        '<a class="btn {} present-link" href="{}" title="{}" data-present-link>{}</a>', size, href, title, label
    )
