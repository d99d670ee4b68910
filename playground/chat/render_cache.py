"""Rendered HTML of finished messages, remembered per process, so a long conversation opens without rendering
its messages again: the markdown of a text, and the whole article (chat/_message.html) of a message.

Both are bounded by the characters they hold (least recently used out first). Markdown is keyed by the text
itself. An article is keyed by a digest of everything the template reads (every column of the row, its
attachments, its place among its siblings, the language and the URL prefix), so an edited, switched or failed
message is simply a new entry; streaming messages and answers with tool calls (whose cards depend on the
messages after them) are rendered each time. A compare column's parameter fields (the same on every page of a
model) are kept by the model's catalog row.
"""

import hashlib
import secrets

from django.template.defaulttags import CsrfTokenNode
from django.template.loader import get_template
from django.urls import get_script_prefix
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import get_language

from playground.chat.models import Attachment, Message
from playground.lib.markdown.cache import LARGEST, Lru

_articles = Lru(16_000_000)
_columns = Lru(1_000_000)


# Articles are rendered with this in place of the request's CSRF token, which is put in on the way out.
_CSRF = "csrf" + secrets.token_hex(16)
_CSRF_INPUT = f'<input type="hidden" name="csrfmiddlewaretoken" value="{_CSRF}">'
_FIELDS = [field.attname for field in Message._meta.concrete_fields]
_ATTACHMENT_FIELDS = [field.attname for field in Attachment._meta.concrete_fields]
_PLACE = ("sibling_ids", "sibling_index", "sibling_count", "prev_sibling", "next_sibling")


def article_key(message: Message) -> bytes | None:
    """What the article of `message` is remembered by, or None when it must be rendered each time."""
    if not message.pk or message.status == Message.STREAMING or message.tool_calls:
        return None
    values = [getattr(message, name) for name in _FIELDS]
    values += [getattr(message, name, None) for name in _PLACE]
    if message.role == "user":
        values += [[getattr(item, name) for name in _ATTACHMENT_FIELDS] for item in message.attachments.all()]
    values += [get_language(), get_script_prefix()]
    return hashlib.blake2b(repr(values).encode(), digest_size=16).digest()


def article(message: Message, csrf_token=None) -> SafeString:
    """chat/_message.html for `message`, from memory when it is finished (the same HTML as rendering it)."""
    key = article_key(message)
    html = _articles.get(key) if key is not None else None
    if html is None:
        html = get_template("chat/_message.html").render({"message": message, "csrf_token": _CSRF})
        if key is not None and len(html) <= LARGEST:
            _articles.put(key, html)
    # What {% csrf_token %} gives for this request's token (nothing without one).
    html = html.replace(_CSRF_INPUT, CsrfTokenNode().render({"csrf_token": csrf_token}))
    return mark_safe(html)  # noqa: S308 - the template's own output, autoescaped when it was rendered


def compare_params(form, model) -> SafeString:
    """chat/_compare_params.html for a compare column's form (panel_views.compare_forms: unset, the same on every
    page of the model), remembered by the model's catalog row, the column and the language. Four columns of a
    dozen widgets each went through Django's form templates on every chat page (issue 24)."""
    row = [getattr(model, name.attname) for name in model._meta.concrete_fields] if model is not None else None
    key = hashlib.blake2b(repr([row, form.prefix, get_language()]).encode(), digest_size=16).digest()
    html = _columns.get(key)
    if html is None:
        html = get_template("chat/_compare_params.html").render({"params": form})
        _columns.put(key, html)
    return mark_safe(html)  # noqa: S308 - the template's own output, autoescaped when it was rendered
